package system

import (
	"net/netip"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/netstack"
	"github.com/ether9/ether9/ns/admin"
)

func TestParseCmdline(t *testing.T) {
	tests := []struct {
		line    string
		want    func(*Options)
		wantErr string
	}{
		{"console=ttyS0 quiet intel_iommu=off", func(*Options) {}, ""},
		{"ether9.ip=10.0.2.15/24 ether9.gw=10.0.2.2 ether9.selftest", func(o *Options) {
			o.IP = netip.MustParsePrefix("10.0.2.15/24")
			o.Gateway = netip.MustParseAddr("10.0.2.2")
			o.Selftest = true
		}, ""},
		{"ether9.dhcp=off ether9.iommu=deferred ether9.http=8080 ether9.9p=rw ether9.ping=0 ether9.irq=off", func(o *Options) {
			o.DHCP, o.IOMMU, o.HTTPPort, o.NineP, o.Ping, o.IRQ = false, "deferred", 8080, "rw", false, false
		}, ""},
		{"ether9.msix=off", func(o *Options) { o.MSIX = false }, ""},
		{"ether9.intremap=off", func(o *Options) { o.IntRemap = false }, ""},
		{"ether9.spin=200us", func(o *Options) { o.Spin = 200 * time.Microsecond }, ""},
		{"ether9.spin=0", func(o *Options) { o.Spin = 0 }, ""},
		{"ether9.spin=-1ms ether9.ping=off", func(o *Options) { o.Ping = false }, "ether9.spin=-1ms"},
		{"ether9.spin=2s", func(*Options) {}, "ether9.spin=2s"},
		{"ether9.queues=2", func(o *Options) { o.Queues = 2 }, ""},
		{"ether9.queues=0", func(*Options) {}, "ether9.queues=0"},
		{"ether9.queues=65", func(*Options) {}, "ether9.queues=65"},
		{"ether9.queues=x", func(*Options) {}, "ether9.queues=x"},
		{"ether9.spin", func(*Options) {}, "ether9.spin"},
		{"ether9.ip=10.0.2.15 ether9.gw=10.0.2.2", func(o *Options) {
			o.Gateway = netip.MustParseAddr("10.0.2.2") // the bad ip is reported, the gateway still applies
		}, "ether9.ip=10.0.2.15"},
		{"ether9.ntp=10.0.2.2,192.0.2.123:1123", func(o *Options) {
			o.NTP = []netip.AddrPort{netip.MustParseAddrPort("10.0.2.2:123"), netip.MustParseAddrPort("192.0.2.123:1123")}
		}, ""},
		{"ether9.ntp=pool.ntp.org", func(*Options) {}, "ether9.ntp=pool.ntp.org"},
		{"ether9.dns=10.0.2.3,fd00::3 ether9.ether1.ip=10.0.3.1/24,fd00:3::1/64 ether9.ether1.dhcp=off ether9.ether0.ip=fd00::15/64", func(o *Options) {
			o.DNS = []netip.Addr{netip.MustParseAddr("10.0.2.3"), netip.MustParseAddr("fd00::3")}
			o.NICs = map[int]NICOptions{
				0: {Addrs: []netip.Prefix{netip.MustParsePrefix("fd00::15/64")}},
				1: {Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.3.1/24"), netip.MustParsePrefix("fd00:3::1/64")}, NoDHCP: true},
			}
		}, ""},
		{"ether9.ether01.ip=10.0.3.1/24 ether9.ether64.dhcp=off ether9.ether1.ip=10.0.3.1 ether9.dns=x ether9.ether2.mtu=9000", func(o *Options) {
			o.Unknown = []string{"ether2.mtu"}
		}, "ether9.ether01.ip"},
		{"ether9.token=0123456789abcdef ether9.admin=ether1,192.168.1.0/24", func(o *Options) {
			o.Token, _ = admin.ParseToken("0123456789abcdef")
			o.Admin, _ = admin.ParseWhere("ether1,192.168.1.0/24")
		}, ""},
		{"ether9.token=short ether9.admin=eth0", func(*Options) {}, "ether9.token=short"},
		{"ether9.admin=10.0.0.0/33", func(*Options) {}, "ether9.admin="},
		{"ether9.iommu=maybe ether9.http=0 ether9.frob=1", func(o *Options) {
			o.Unknown = []string{"frob"}
		}, "ether9.http=0"},
	}
	for _, tt := range tests {
		want := DefaultOptions()
		tt.want(&want)
		got, err := ParseCmdline(tt.line)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseCmdline(%q) =\n %+v, want\n %+v", tt.line, got, want)
		}
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ParseCmdline(%q): unexpected error %v", tt.line, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseCmdline(%q): error %v, want one naming %q", tt.line, err, tt.wantErr)
		}
	}
}

// FuzzParseCmdline: any command line parses without a panic, and a
// parameter it refuses leaves nothing of itself behind.
func FuzzParseCmdline(f *testing.F) {
	for _, s := range []string{"ether9.ip=10.0.2.15/24 ether9.gw=10.0.2.2", "ether9.ether1.ip=10.0.3.1/24,fd00::1/64 ether9.ether1.dhcp=off", "ether9.dns=1.1.1.1,::1", "ether9.ether9999999999999999999.ip=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		o, err := ParseCmdline(line)
		if err != nil && err.Error() == "" {
			t.Fatal("an error without words")
		}
		for n := range o.NICs {
			if n < 0 || n >= maxNICs {
				t.Fatalf("interface %d accepted", n)
			}
		}
	})
}

// TestIRQPacing: ether9.spin=0 must reach netstack as no spin at all (its
// zero Spin means the 1 ms default) and an idle threshold that the first
// empty poll passes; a spin is the loop's whole busy time before it
// sleeps on the interrupt.
func TestIRQPacing(t *testing.T) {
	var o netstack.Options
	irqPacing(&o, 0)
	if o.Spin >= 0 || o.IdleAfter <= 0 || o.IdleAfter >= 20*time.Microsecond || o.IdleWait != idleWaitIRQ {
		t.Errorf("spin 0: Spin %v IdleAfter %v IdleWait %v, want no spin and an idle threshold under one poll", o.Spin, o.IdleAfter, o.IdleWait)
	}
	irqPacing(&o, 200*time.Microsecond)
	if o.Spin != 200*time.Microsecond || o.IdleAfter != o.Spin || o.IdleWait != idleWaitIRQ {
		t.Errorf("spin 200us: Spin %v IdleAfter %v IdleWait %v", o.Spin, o.IdleAfter, o.IdleWait)
	}
}

// TestQueuePairs: without ether9.queues a NIC gets a queue pair per CPU
// the runtime schedules on; with it, what it says.
func TestQueuePairs(t *testing.T) {
	if got, want := queuePairs(0), runtime.GOMAXPROCS(0); got != want {
		t.Errorf("default: %d pairs, want one per CPU (%d)", got, want)
	}
	if got := queuePairs(3); got != 3 {
		t.Errorf("ether9.queues=3: %d pairs", got)
	}
}
