package e1000e

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ether9/ether9/drivers/ring"
)

// maxCopybreak: a copybreak above the buffer size copies every frame.
const maxCopybreak = rxBufSize

// Ctl implements nic.NIC. Commands:
//
//	copybreak N            frames shorter than N bytes are copied (0..2048)
//	copybreak-mode sync|unmap
//	tso on|off|auto
//	mtu N
//
// A bad command changes nothing.
func (d *Device) Ctl(cmd string) error {
	f := strings.Fields(cmd)
	if len(f) != 2 {
		return fmt.Errorf("e1000e %s: ctl %q: want a command and one argument", d.name, cmd)
	}
	switch f[0] {
	case "copybreak":
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 0 || n > maxCopybreak {
			return fmt.Errorf("e1000e %s: copybreak %q: want 0..%d", d.name, f[1], maxCopybreak)
		}
		d.rx.SetCopybreak(n)
	case "copybreak-mode":
		m, err := ring.ParseMode(f[1])
		if err != nil {
			return fmt.Errorf("e1000e %s: %w", d.name, err)
		}
		d.rx.SetMode(m)
	case "tso":
		m, err := ParseTSOMode(f[1])
		if err != nil {
			return fmt.Errorf("e1000e %s: %w", d.name, err)
		}
		d.linkMu.Lock()
		d.tsoMode.Store(uint32(m))
		d.evalTSO(*d.link.Load(), true)
		d.linkMu.Unlock()
	case "mtu":
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return fmt.Errorf("e1000e %s: mtu %q: not a number", d.name, f[1])
		}
		return d.SetMTU(n)
	default:
		return fmt.Errorf("e1000e %s: unknown ctl %q (copybreak, copybreak-mode, tso, mtu)", d.name, f[0])
	}
	return nil
}
