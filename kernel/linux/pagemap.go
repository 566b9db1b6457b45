//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/ether9/ether9/kernel"
)

const pageSize = kernel.PageSize

var errUnalignedWindow = errors.New("base not page aligned or size not positive")

// /proc/self/pagemap holds one 64-bit entry per virtual page.
const (
	pmPresent = 1 << 63
	pmSwapped = 1 << 62
	pmPFNMask = 1<<55 - 1 // bits 0-54
)

// pmEntry decodes one pagemap entry into a page frame number. A page that
// is not present, is swapped, or reads as frame 0 (what an unprivileged
// reader sees) has no usable physical address.
func pmEntry(e uint64) (pfn uint64, err error) {
	switch {
	case e&pmPresent == 0:
		return 0, errors.New("page not present")
	case e&pmSwapped != 0:
		return 0, errors.New("page swapped out")
	}
	pfn = e & pmPFNMask
	if pfn == 0 {
		return 0, errors.New("frame number hidden (needs CAP_SYS_ADMIN)")
	}
	return pfn, nil
}

// pagemap resolves virtual addresses of this process to physical ones.
type pagemap struct{ f *os.File }

func openPagemap() (*pagemap, error) {
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil, fmt.Errorf("pagemap: %w", err)
	}
	return &pagemap{f: f}, nil
}

func (p *pagemap) close() error { return p.f.Close() }

// frames returns the physical address of each of the n pages starting at
// the page containing virt.
func (p *pagemap) frames(virt uintptr, n int) ([]kernel.PhysAddr, error) {
	first := uint64(virt) / pageSize
	buf := make([]byte, 8*n)
	if _, err := p.f.ReadAt(buf, int64(first*8)); err != nil {
		return nil, fmt.Errorf("pagemap: read %d entries at page %#x: %w", n, first, err)
	}
	out := make([]kernel.PhysAddr, n)
	for i := range out {
		pfn, err := pmEntry(binary.LittleEndian.Uint64(buf[8*i:]))
		if err != nil {
			return nil, fmt.Errorf("pagemap: virtual %#x: %w", (first+uint64(i))*pageSize, err)
		}
		out[i] = kernel.PhysAddr(pfn * pageSize)
	}
	return out, nil
}

// segments turns the frames of consecutive virtual pages into physically
// contiguous segments covering [virt, virt+n).
func segments(virt uintptr, n int, frames []kernel.PhysAddr) []kernel.Segment {
	var segs []kernel.Segment
	off := int(virt % pageSize)
	left := n
	for i := 0; left > 0; i++ {
		chunk := min(pageSize-off, left)
		phys := frames[i] + kernel.PhysAddr(off)
		if k := len(segs) - 1; k >= 0 && segs[k].Phys+kernel.PhysAddr(segs[k].Len) == phys {
			segs[k].Len += chunk
		} else {
			segs = append(segs, kernel.Segment{Phys: phys, Len: chunk})
		}
		left -= chunk
		off = 0
	}
	return segs
}
