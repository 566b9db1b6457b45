package sim

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/pci"
)

// FuzzConfigAccess sends arbitrary config and MMIO accesses to a bridge
// and an endpoint with BARs and capabilities: nothing may panic, IDs stay
// read-only, and a BAR always reads back a multiple of its size.
func FuzzConfigAccess(f *testing.F) {
	f.Add([]byte{0, 0x10, 0, 4, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{1, 0x04, 0, 2, 0x07, 0, 0, 0, 0, 0x00, 0x01, 4, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		b := NewBus()
		ep := NewConfigSpace(0x8086, 0x10c9, 0x020000, 0)
		ep.SetBAR(0, pci.BARMem64, 128<<10, false)
		ep.SetBAR(2, pci.BARIO, 32, false)
		ep.AddCap(0x11, make([]byte, 10))
		ep.AddExtCap(1, 2, make([]byte, 20))
		br := NewConfigSpace(0x8086, 0x29c1, 0x060400, 1)
		br.SetBridge(0, 1, 1)
		fns := []pci.Addr{{Dev: 1}, {Dev: 2}, {Dev: 3}}
		if err := b.Add(fns[0], &regModel{c: ep, regs: map[uint32]uint64{}}); err != nil {
			t.Fatal(err)
		}
		if err := b.Add(fns[1], cfgOnly{br}); err != nil {
			t.Fatal(err)
		}
		for len(ops) >= 8 {
			a := fns[int(ops[0])%len(fns)]
			off := int(binary.LittleEndian.Uint16(ops[1:])) % 4200
			size := int(ops[3]) % 9
			v := binary.LittleEndian.Uint32(ops[4:])
			ops = ops[8:]
			if v&1 == 0 {
				b.WriteConfig(a, off, size, v)
			} else {
				b.ReadConfig(a, off, size)
			}
			if r, err := b.Regs(a, int(v>>8)%7); err == nil {
				r.Write32(uint32(off), v)
				r.Read64(uint32(off))
			}
		}
		if id, _ := b.ReadConfig(fns[0], 0, 4); id != 0x10c98086 {
			t.Fatalf("vendor/device changed to %#x", id)
		}
		if _, size, addr := ep.BAR(0); addr%size != 0 {
			t.Fatalf("BAR 0 at %#x, not a multiple of %#x", addr, size)
		}
	})
}

// FuzzMemory runs arbitrary allocation, pin, DMA and sync sequences; the
// registry must stay consistent: device reads return what was written.
func FuzzMemory(f *testing.F) {
	f.Add([]byte{0, 10, 1, 20, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, ops []byte) {
		m := NewMemory()
		var regions []kernel.Region
		var pinned [][]byte
		var segs [][]kernel.Segment
		for len(ops) >= 2 {
			op, arg := ops[0], int(ops[1])
			ops = ops[2:]
			switch op % 9 {
			case 0:
				if r, err := m.Alloc(arg*37+1, 1<<(arg%14)); err == nil {
					regions = append(regions, r)
				}
			case 1:
				if len(regions) > 0 {
					i := arg % len(regions)
					if err := m.Free(regions[i]); err != nil {
						t.Fatal(err)
					}
					regions = append(regions[:i], regions[i+1:]...)
				}
			case 2:
				buf := make([]byte, arg*61+1)
				if s, err := m.Pin(buf); err == nil {
					pinned, segs = append(pinned, buf), append(segs, s)
				}
			case 3:
				if len(pinned) > 0 {
					i := arg % len(pinned)
					if err := m.Unpin(pinned[i]); err != nil {
						t.Fatal(err)
					}
					pinned, segs = append(pinned[:i], pinned[i+1:]...), append(segs[:i], segs[i+1:]...)
				}
			case 4:
				m.SetCoherent(arg%2 == 0)
			case 5:
				m.SetScatter(arg%2 == 0)
			case 6:
				m.SetFlushTracking(arg%2 == 0)
			case 7:
				if len(pinned) > 0 {
					i := arg % len(pinned)
					s := segs[i][len(segs[i])-1]
					want := []byte{byte(arg), byte(arg + 1)}[:min(2, s.Len)]
					if err := m.DeviceWrite(s.Phys, want); err != nil {
						t.Fatal(err)
					}
					got := make([]byte, len(want))
					if err := m.DeviceRead(s.Phys, got); err != nil || string(got) != string(want) {
						t.Fatalf("device read back %v, %v; wrote %v", got, err, want)
					}
					// Read by the CPU, then handed back for the next write.
					m.SyncForCPU(s.Phys, len(want))
					m.SyncForDevice(s.Phys, len(want))
				}
			case 8:
				if len(regions) > 0 {
					r := regions[arg%len(regions)]
					m.FlushCache(r.Buf)
					got := make([]byte, 1)
					if err := m.TableView().DeviceRead(r.Phys, got); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if len(m.Errors()) != 0 {
			t.Fatalf("misuse from valid calls: %v", m.Errors())
		}
	})
}
