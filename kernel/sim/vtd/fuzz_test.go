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

// FuzzInterrupt remaps arbitrary requests through a table of arbitrary
// entries, under arbitrary IRTA and GCMD settings, with interrupt entry
// cache invalidations mixed in: the model must never panic, must pass a
// request unchanged with remapping off, and must hand on only messages
// in the interrupt window or block with an interrupt fault.
func FuzzInterrupt(f *testing.F) {
	irte := make([]byte, 16)
	binary.LittleEndian.PutUint64(irte, IRTE_P|0x40<<IRTE_V_SHIFT)
	binary.LittleEndian.PutUint64(irte[8:], SVT_SID<<IRTE_SVT_SHIFT|0x10)
	req := func(sid uint16, addr uint64, data uint32) []byte {
		b := binary.LittleEndian.AppendUint16(nil, sid)
		b = binary.LittleEndian.AppendUint64(b, addr)
		return binary.LittleEndian.AppendUint32(b, data)
	}
	reqs := append(req(0x10, 0xfee0_0010, 0), req(0x11, 0xfee0_0018, 3)...)
	reqs = append(reqs, req(0x10, 0xfee0_0000, 0x30)...)
	f.Add(irte, uint64(0x8007), uint32(GCMD_IRE), reqs)
	f.Add(irte, uint64(0x800f|IRTA_EIME), uint32(GCMD_IRE|GCMD_CFI|GCMD_QIE|2), reqs)
	for _, hi := range []uint64{SVT_SID<<IRTE_SVT_SHIFT | SQ_IGN210<<IRTE_SQ_SHIFT, SVT_BUS<<IRTE_SVT_SHIFT | 0x0001, 3 << IRTE_SVT_SHIFT} {
		e := append([]byte(nil), irte...)
		binary.LittleEndian.PutUint64(e[8:], hi)
		f.Add(e, uint64(0x8003), uint32(GCMD_IRE|GCMD_QIE), reqs)
	}
	f.Fuzz(func(t *testing.T, table []byte, irta uint64, gcmd uint32, reqs []byte) {
		mem := &flatMem{b: make([]byte, 1<<16)}
		for i := 0; len(table) > 0 && i < len(mem.b); i += len(table) {
			copy(mem.b[i:], table)
		}
		cfg := QEMU()
		cfg.InvalidationCost = -1
		cfg.CachingMode = gcmd&1 != 0
		cfg.EIM = gcmd&2 != 0 // low GCMD bits are reserved: they pick the model
		u, err := New(cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		u.SetQueueMemory(mem)
		const queue = 0xf000 // one page of 256 descriptors
		u.Write64(IQA, queue)
		u.Write64(IRTA, irta)
		u.Write32(GCMD, GCMD_SIRTP)
		u.Write32(GCMD, gcmd&^(GCMD_SIRTP|GCMD_SRTP|GCMD_TE))
		tail := uint64(0)
		for len(reqs) >= 14 {
			src := binary.LittleEndian.Uint16(reqs)
			addr := binary.LittleEndian.Uint64(reqs[2:])
			data := binary.LittleEndian.Uint32(reqs[10:])
			reqs = reqs[14:]
			if src&0x8000 != 0 && u.Read32(GSTS)&GSTS_QIES != 0 {
				// An IEC invalidation built from the request's bits.
				mem.put64(queue+tail*16, QI_IEC|addr&(QI_IEC_SELECTIVE|0x1f<<QI_IEC_IM_SHIFT|0xffff<<QI_IEC_IIDX_SHIFT))
				mem.put64(queue+tail*16+8, 0)
				tail = (tail + 1) % 256
				u.Write64(IQT, tail<<4)
			}
			on := u.Read32(GSTS)&GSTS_IRES != 0
			before := len(u.FaultLog())
			a, d, ok := u.Interrupt(src, addr, data)
			switch {
			case !on:
				if !ok || a != addr || d != data {
					t.Fatalf("remapping off: %#x/%#x became %#x/%#x, %v", addr, data, a, d, ok)
				}
			case !ok:
				log := u.FaultLog()
				if a != 0 || d != 0 || len(log) == before && before < faultLogMax || !log[len(log)-1].Interrupt {
					t.Fatalf("blocked %#x/%#x: out %#x/%#x, log %v", addr, data, a, d, log)
				}
			case addr&MSI_ADDR_FORMAT != 0:
				if uint32(a)&MSI_ADDR_WINDOW_MASK != MSI_ADDR_WINDOW || d&^0x87ff != 0 {
					t.Fatalf("remapped %#x/%#x to %#x/%#x", addr, data, a, d)
				}
			}
		}
		_ = u.Stats()
	})
}
