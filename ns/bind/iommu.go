package bind

import (
	"fmt"
	"strings"

	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/ns"
)

// IOMMU registers /dev/iommu/{ctl,stats,faults,domains}. domains lists
// the requester ids that have a domain, with the function's name.
func IOMMU(n *ns.Namespace, u *iommu.Unit, domains func() []Domain) error {
	files := []struct {
		name string
		f    ns.File
	}{
		{"ctl", ns.Ctl{Render: func() (string, error) {
			m, batch := u.Mode()
			if m == iommu.Strict {
				return fmt.Sprintf("%v\n", m), nil
			}
			return fmt.Sprintf("%v %d\n", m, batch), nil
		}, Do: u.Ctl}},
		{"stats", ns.Text(func() string { return u.Stats().String() })},
		{"faults", ns.Text(func() string {
			var b strings.Builder
			for _, f := range u.Faults() {
				fmt.Fprintf(&b, "%v\n", f)
			}
			return b.String()
		})},
		{"domains", ns.Text(func() string {
			var b strings.Builder
			if domains != nil {
				for _, d := range domains() {
					fmt.Fprintf(&b, "%02x:%02x.%x domain %d %s\n", d.Source>>8, d.Source>>3&0x1f, d.Source&7, d.ID, d.Name)
				}
			}
			return b.String()
		})},
	}
	for _, f := range files {
		if err := n.Add("/dev/iommu/"+f.name, f.f); err != nil {
			return fmt.Errorf("bind iommu: %w", err)
		}
	}
	return nil
}

// Domain is one device's translation domain.
type Domain struct {
	Source uint16 // requester id
	ID     uint16 // domain id
	Name   string // "ether0"
}
