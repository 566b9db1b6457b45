package system

import (
	"testing"
	"time"
)

func TestMachineCtlHaltsAfterReplying(t *testing.T) {
	halted := make(chan bool, 1)
	s := &System{
		plat: Platform{Name: "test", Halt: func(reboot bool) error { halted <- reboot; return nil }},
		logf: func(string, ...any) {},
	}
	start := time.Now()
	if err := s.Ctl("machine reboot"); err != nil {
		t.Fatal(err)
	}
	select {
	case reboot := <-halted:
		if !reboot {
			t.Fatal("reboot command powered off")
		}
		if time.Since(start) < haltDelay {
			t.Fatal("halted before the reply could leave")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("machine never halted")
	}
	for _, bad := range []string{"machine", "machine halt", "machine poweroff now", "iommu strict", "ether0 tso off"} {
		if err := s.Ctl(bad); err == nil {
			t.Errorf("Ctl(%q) accepted", bad)
		}
	}
	s.plat.Halt = nil
	if err := s.Ctl("machine poweroff"); err == nil {
		t.Error("poweroff accepted on a platform that cannot halt")
	}
}
