package system

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ether9/ether9/kernel/iommu"
)

// Ctl applies one control command:
//
//	etherN CMD...              the NIC's own commands (copybreak 256, tso off, ...)
//	iommu strict               invalidate the IOTLB on every unmap
//	iommu deferred [BATCH]     invalidate once per BATCH unmaps
//	iommu clear-faults         forget the recorded faults (the count stays)
func (s *System) Ctl(cmd string) error {
	f := strings.Fields(cmd)
	if len(f) < 2 {
		return fmt.Errorf("ctl %q: want a target and a command", cmd)
	}
	if f[0] == "iommu" {
		return s.iommuCtl(f[1:])
	}
	for _, p := range s.ports {
		if p.NIC.Name() == f[0] {
			return p.NIC.Ctl(strings.Join(f[1:], " "))
		}
	}
	return fmt.Errorf("ctl %q: no such target %q", cmd, f[0])
}

func (s *System) iommuCtl(f []string) error {
	if s.unit == nil {
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
		if err := s.unit.SetMode(mode, batch); err != nil {
			return err
		}
		s.logf("iommu: mode %v", mode)
		return nil
	case "clear-faults":
		s.unit.ClearFaults()
		return nil
	}
	return fmt.Errorf("iommu: unknown command %q (strict, deferred, clear-faults)", f[0])
}
