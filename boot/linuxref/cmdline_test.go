package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseCmdline(t *testing.T) {
	c, err := parseCmdline("console=ttyS0 quiet intel_iommu=on ref.modules=dca,i2c-algo-bit,igb ref.ip=10.0.3.15/24 ref.gw=10.0.3.2 ether9.token=0123456789abcdef0123")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.modules, []string{"dca", "i2c-algo-bit", "igb"}) {
		t.Errorf("modules %q", c.modules)
	}
	if c.addr.String() != "10.0.3.15/24" || c.gw.String() != "10.0.3.2" {
		t.Errorf("addr %v gw %v", c.addr, c.gw)
	}
	if !c.token.Matches("0123456789abcdef0123") {
		t.Errorf("token not taken")
	}
	// Nothing of ours: QEMU user networking's defaults and no token.
	c, err = parseCmdline("console=ttyS0")
	if err != nil || c.addr != defaultAddr || c.gw != defaultGW || c.token.Valid() || len(c.modules) != 0 {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	for _, bad := range []string{
		"ref.modules=../../etc/x", "ref.modules=igb.ko", "ref.ip=10.0.2.15", "ref.ip=fd00::15/64",
		"ref.gw=nope", "ref.gw=10.0.9.2", "ether9.token=short",
	} {
		if _, err := parseCmdline("quiet " + bad); err == nil || !strings.Contains(err.Error(), "cmdline") {
			t.Errorf("%q: err = %v, want a cmdline error", bad, err)
		}
	}
}

func FuzzParseCmdline(f *testing.F) {
	f.Add("ref.modules=dca,igb ref.ip=10.0.2.15/24 ref.gw=10.0.2.2 ether9.token=0123456789abcdef")
	f.Add("ref.modules=,, ref.ip=0.0.0.0/0 ref.gw=255.255.255.255")
	f.Fuzz(func(t *testing.T, line string) {
		c, err := parseCmdline(line)
		if err != nil {
			return
		}
		if !c.addr.Addr().Is4() || !c.addr.Contains(c.gw) {
			t.Fatalf("accepted %v via %v", c.addr, c.gw)
		}
		for _, m := range c.modules {
			if m == "" || strings.ContainsAny(m, "/.") {
				t.Fatalf("accepted module %q", m)
			}
		}
	})
}
