package vtd

import (
	"encoding/binary"
	"testing"
)

// FuzzUnit drives the register interface and translation with arbitrary
// operations over memory filled with arbitrary table contents: whatever
// software or tables do, the model must neither panic nor hang.
func FuzzUnit(f *testing.F) {
	seed := make([]byte, 0, 64)
	put := func(op byte, off uint16, v uint64) {
		seed = append(seed, op, byte(off), byte(off>>8))
		seed = binary.LittleEndian.AppendUint64(seed, v)
	}
	put(3, RTADDR, 0x1000)
	put(2, GCMD, GCMD_SRTP)
	put(2, GCMD, GCMD_TE)
	put(4, 0x0300, 0x1234)
	put(3, IOTLB, IOTLB_IVT|IOTLB_PAGE<<IOTLB_IIRG_SHIFT)
	put(3, IQA, 0x2000)
	put(2, GCMD, GCMD_QIE|GCMD_TE)
	put(3, IQT, 0x40)
	f.Add(seed, []byte{1, 0x10, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ops, table []byte) {
		mem := &flatMem{b: make([]byte, 1<<16)}
		// Repeat the table bytes over memory so entries point at entries.
		for i := 0; len(table) > 0 && i < len(mem.b); i += len(table) {
			copy(mem.b[i:], table)
		}
		cfg := QEMU()
		cfg.NFR = 4
		cfg.InvalidationCost = -1
		cfg.CachingMode = len(table)%2 == 1
		cfg.PagingCache = len(table)%3 == 1
		u, err := New(cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		u.SetQueueMemory(mem)
		for len(ops) >= 11 {
			op, off, v := ops[0], uint32(binary.LittleEndian.Uint16(ops[1:]))&0x1fff, binary.LittleEndian.Uint64(ops[3:])
			ops = ops[11:]
			switch op % 6 {
			case 0:
				u.Read32(off)
			case 1:
				u.Read64(off)
			case 2:
				u.Write32(off, uint32(v))
			case 3:
				u.Write64(off, v)
			default:
				p, err := u.Translate(uint16(off), v, op&8 != 0)
				if err == nil && u.Read32(GSTS)&GSTS_TES == 0 && uint64(p) != v {
					t.Fatalf("translation off: %#x became %#x", v, p)
				}
			}
		}
		_ = u.Stats()
		_ = u.FaultLog()
	})
}
