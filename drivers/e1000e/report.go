package e1000e

import "github.com/ether9/ether9/drivers/nic"

// TSOReason implements nic.TSOReasoner: the rule that decided TSO's state
// at the last link change or tso command.
func (d *Device) TSOReason() string {
	if why := d.tsoWhy.Load(); why != nil {
		return *why
	}
	return ""
}

var _ nic.TSOReasoner = (*Device)(nil)
