package iommu

import (
	"fmt"
	"strconv"
	"strings"
)

// Ctl carries out one command written to the unit's ctl file:
//
//	strict            invalidate on every unmap
//	deferred [batch]  batch unmaps, one invalidation per batch
//	flush             complete the pending deferred unmaps
//	clearfaults       forget the faults read so far
func (u *Unit) Ctl(line string) error {
	f := strings.Fields(line)
	if len(f) == 0 {
		return fmt.Errorf("iommu ctl: empty command")
	}
	switch f[0] {
	case "strict", "deferred", "lazy":
		m, err := ParseMode(f[0])
		if err != nil {
			return err
		}
		batch := 0
		if len(f) > 2 || (len(f) == 2 && m == Strict) {
			return fmt.Errorf("iommu ctl: %q: usage: strict | deferred [batch]", line)
		}
		if len(f) == 2 {
			batch, err = strconv.Atoi(f[1])
			if err != nil || batch <= 0 {
				return fmt.Errorf("iommu ctl: batch %q: want a positive number", f[1])
			}
		}
		return u.SetMode(m, batch)
	case "flush":
		return u.Flush()
	case "clearfaults":
		u.ClearFaults()
		return nil
	}
	return fmt.Errorf("iommu ctl: unknown command %q", f[0])
}
