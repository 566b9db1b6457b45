package ring

import (
	"errors"
	"fmt"

	"github.com/ether9/ether9/drivers/gso"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel"
)

// ErrTxFull stops a batch: the packet was not taken, and goes again once
// completions free descriptors.
var ErrTxFull = errors.New("tx ring full")

// ClaimDesc is Claim that says ErrTxFull for a full ring.
func (t *TxRing) ClaimDesc() (int, error) {
	if i := t.Claim(); i >= 0 {
		return i, nil
	}
	return -1, ErrTxFull
}

// SoftGSO writes a GSO packet segmented in software, one frame per
// bounce slot, checksums and all: TSO went off after the stack chose
// GSO. data encodes the driver's descriptor for one frame of n bytes at
// addr; last marks the packet's last frame, whose completion the device
// is asked to report, since the ring reclaims the frames as one packet.
func (t *TxRing) SoftGSO(plan *gso.Plan, p *nic.TxPacket, data func(desc []byte, addr kernel.DMAAddr, n int, last bool)) error {
	if plan.Segments > t.Descs.Len()-1 {
		// Never fits however much is reclaimed (a small ring or MTU):
		// an error, not back-pressure that would stall the queue.
		return fmt.Errorf("%d segments, more than the %d-descriptor ring holds", plan.Segments, t.Descs.Len())
	}
	if plan.Segments > t.Free() {
		return ErrTxFull
	}
	for k := 0; k < plan.Segments; k++ {
		i, err := t.ClaimDesc()
		if err != nil {
			return err
		}
		b, addr := t.Bounce(i)
		n, err := plan.Build(b, &p.Data, k)
		if err != nil {
			return err
		}
		data(t.Descs.At(i), addr, n, k == plan.Segments-1)
	}
	t.Stats.SoftGSO.Add(1)
	t.Stats.Frames.Add(uint64(plan.Segments))
	t.Commit(&p.Data)
	return nil
}
