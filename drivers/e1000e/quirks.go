package e1000e

import (
	"fmt"

	"github.com/ether9/ether9/drivers/nic"
)

// TSOMode is the administrator's TSO setting ("tso on|off|auto").
type TSOMode uint8

const (
	TSOAuto TSOMode = iota // the quirk rules decide
	TSOOn                  // forced on where the MAC allows it at all
	TSOOff
)

func (m TSOMode) String() string {
	return [...]string{"auto", "on", "off"}[m]
}

// ParseTSOMode reads "on", "off" or "auto".
func ParseTSOMode(s string) (TSOMode, error) {
	switch s {
	case "auto":
		return TSOAuto, nil
	case "on":
		return TSOOn, nil
	case "off":
		return TSOOff, nil
	}
	return 0, fmt.Errorf("e1000e: tso %q: want on, off or auto", s)
}

// tsoRule is one line of the TSO decision table: the first rule whose
// match holds decides.
type tsoRule struct {
	why   string
	match func(info MACInfo, mode TSOMode, link nic.Link) bool
	use   bool
}

// tsoRules are evaluated at probe and at every link-up. The order matters:
// the Sunrise Point rule comes before the force flag because forcing TSO
// on an I219 there costs a third of the throughput whatever the speed.
var tsoRules = []tsoRule{
	{"mac never uses TSO (I219 on Sunrise Point loses throughput)",
		func(i MACInfo, _ TSOMode, _ nic.Link) bool { return i.Flags&FlagNoTSO != 0 }, false},
	{"switched off", func(_ MACInfo, m TSOMode, _ nic.Link) bool { return m == TSOOff }, false},
	{"forced on", func(_ MACInfo, m TSOMode, _ nic.Link) bool { return m == TSOOn }, true},
	{"link below 1000 Mb/s (TSO at 10/100 overruns the TX FIFO)",
		func(i MACInfo, _ TSOMode, l nic.Link) bool {
			return i.Flags&FlagTSOFast != 0 && l.Up && l.SpeedMbps < 1000
		}, false},
	{"default", func(MACInfo, TSOMode, nic.Link) bool { return true }, true},
}

// useTSO decides whether TSO is on and says which rule decided.
func useTSO(info MACInfo, mode TSOMode, link nic.Link) (bool, string) {
	for _, r := range tsoRules {
		if r.match(info, mode, link) {
			return r.use, r.why
		}
	}
	return false, "no rule"
}
