package ring

import (
	"fmt"

	"github.com/ether9/ether9/kernel"
	"gvisor.dev/gvisor/pkg/buffer"
)

// PageSlot is a receive slot that owns a page, mapped once, and arms one
// half of it at a time, the way Linux's igb and igc reuse pages: a frame
// handed up takes its half with it (a view sharing the page, no copy) and
// the slot flips to the other half, as long as nobody else still holds
// that half.
type PageSlot struct {
	Page   *buffer.View // the ring's own reference to a whole page; nil: none
	Addr   kernel.DMAAddr
	Off    int // the half armed for the device: 0 or HalfPage
	Mapped bool
}

// Half is the device address of the armed half.
func (s *PageSlot) Half() kernel.DMAAddr { return s.Addr + kernel.DMAAddr(s.Off) }

// Arm readies the slot's half for the device and returns its address:
// a slot without a page gets a new one, allocated and mapped; one with a
// page has its half synced for the device, and is given up if that
// fails.
func (s *PageSlot) Arm(dma kernel.DMA, st *RxStats, ps *PageStats) (kernel.DMAAddr, error) {
	if s.Page == nil {
		v := buffer.NewViewSize(kernel.PageSize)
		if v.Size() != kernel.PageSize {
			v.Release()
			st.AllocFails.Add(1)
			return 0, fmt.Errorf("ring: rx page: %w", kernel.ErrNoMemory)
		}
		addr, err := dma.Map(v.AsSlice(), kernel.FromDevice)
		if err != nil {
			v.Release()
			st.MapFailures.Add(1)
			return 0, fmt.Errorf("ring: map rx page: %w", err)
		}
		st.Maps.Add(1)
		ps.Allocs.Add(1)
		*s = PageSlot{Page: v, Addr: addr, Mapped: true}
		return addr, nil
	}
	if err := dma.SyncForDevice(s.Half(), HalfPage, kernel.FromDevice); err != nil {
		// The half's ownership is in doubt: give the page up.
		s.GiveUp(dma, st)
		st.Drop(DropDMA)
		return 0, fmt.Errorf("ring: sync rx half for device: %w", err)
	}
	return s.Half(), nil
}

// Flip follows a handoff of the armed half: if only the ring and that
// packet hold the page the slot moves to the other half, otherwise the
// page is left to the stack and the slot given up for a new one. It
// reports whether the page stayed.
func (s *PageSlot) Flip(dma kernel.DMA, st *RxStats, ps *PageStats) bool {
	switch refs, ok := chunkRefs(s.Page); {
	case !ok:
		ps.Outdated.Add(1)
	case refs == 2:
		s.Off ^= HalfPage
		ps.Flips.Add(1)
		return true
	default:
		ps.Released.Add(1)
	}
	s.GiveUp(dma, st)
	return false
}

// GiveUp unmaps the slot's page and drops the ring's reference; views the
// stack holds keep the memory alive.
func (s *PageSlot) GiveUp(dma kernel.DMA, st *RxStats) error {
	var err error
	if s.Mapped {
		if err = dma.Unmap(s.Addr, kernel.PageSize, kernel.FromDevice); err == nil {
			st.Unmaps.Add(1)
		} else {
			err = fmt.Errorf("ring: unmap rx page at %#x: %w", uint64(s.Addr), err)
		}
	}
	if s.Page != nil {
		s.Page.Release()
	}
	*s = PageSlot{}
	return err
}
