package system

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ether9/ether9/kernel/iommu"
)

// Ctl applies one control command:
//
//	etherN CMD...              the NIC's commands (copybreak 256, tso off, capture on, ...)
//	iommu strict               invalidate the IOTLB on every unmap (every unit)
//	iommu deferred [BATCH]     invalidate once per BATCH unmaps
//	iommu clear-faults         forget the recorded faults (the count stays)
//	machine poweroff|reboot    stop or restart, once the answer is on its way
func (s *System) Ctl(cmd string) error {
	f := strings.Fields(cmd)
	if len(f) < 2 {
		return fmt.Errorf("ctl %q: want a target and a command", cmd)
	}
	switch f[0] {
	case "iommu":
		return s.iommuCtl(f[1:])
	case "machine":
		return s.machineCtl(f[1:])
	}
	for i, p := range s.ports {
		if p.NIC.Name() != f[0] {
			continue
		}
		// The endpoint's words (gro, capture), else the driver's.
		if ep := s.endpoint(i); ep != nil {
			return ep.Ctl(strings.Join(f[1:], " "))
		}
		return p.NIC.Ctl(strings.Join(f[1:], " "))
	}
	return fmt.Errorf("ctl %q: no such target %q", cmd, f[0])
}

func (s *System) iommuCtl(f []string) error {
	units := s.IOMMUs()
	if len(units) == 0 {
		return fmt.Errorf("iommu: translation is off")
	}
	switch f[0] {
	case "strict", "deferred":
		mode, err := iommu.ParseMode(f[0])
		if err != nil {
			return err
		}
		batch := iommu.DefaultBatch
		if len(f) > 2 {
			return fmt.Errorf("iommu %s: too many arguments", f[0])
		}
		if len(f) == 2 {
			n, err := strconv.Atoi(f[1])
			if err != nil || n <= 0 {
				return fmt.Errorf("iommu %s: batch %q: want a positive number", f[0], f[1])
			}
			batch = n
		}
		for _, u := range units {
			if err := u.Unit.SetMode(mode, batch); err != nil {
				return fmt.Errorf("iommu: unit %#x: %w", u.Base, err)
			}
		}
		s.logf("iommu: mode %v", mode)
		return nil
	case "clear-faults":
		for _, u := range units {
			u.Unit.ClearFaults()
		}
		return nil
	}
	return fmt.Errorf("iommu: unknown command %q (strict, deferred, clear-faults)", f[0])
}

// haltDelay lets the reply to a poweroff or reboot command leave first.
const haltDelay = 200 * time.Millisecond

func (s *System) machineCtl(f []string) error {
	if len(f) != 1 || (f[0] != "poweroff" && f[0] != "reboot") {
		return fmt.Errorf("machine: want poweroff or reboot")
	}
	if s.plat.Halt == nil {
		return fmt.Errorf("machine %s: not possible on the %s platform", f[0], s.plat.Name)
	}
	reboot := f[0] == "reboot"
	time.AfterFunc(haltDelay, func() {
		s.logf("ether9: %s", f[0])
		if err := s.plat.Halt(reboot); err != nil {
			s.logf("ether9: %s: %v", f[0], err)
		}
	})
	return nil
}
