package mi225

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// FuzzTxRing hands the model arbitrary descriptors (their buffer addresses
// kept inside the rig's buffers, so the data is whatever the fuzzer wrote
// there too): it must consume them all without panicking.
func FuzzTxRing(f *testing.F) {
	tso := ctxTx(macLen, 20, 0, TucmdL4TCP|TucmdIPv4, 20, 100, 0)
	data := dataTx(0, 600, TxdCmdTSE|TxdCmdEOP|TxdCmdRS, TxdPoptsTXSM|TxdPoptsIXSM|546<<TxdPaylenShift)
	f.Add(append(tso[:], data[:]...), tcpFrame(false, peerMAC, payloadBytes(546, 1), 0x18, false, 0))
	f.Add(make([]byte, 64), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, descs, buf []byte) {
		r := newRig(t, 0x15f3)
		r.setupTx(0, 8)
		r.txBuf(0, 0, buf)
		le := binary.LittleEndian
		for i := 0; i+descLen <= len(descs) && i/descLen < 7; i += descLen {
			var d [descLen]byte
			copy(d[:], descs[i:])
			// Keep the address in the buffer area, the length within a slot.
			le.PutUint64(d[0:], uint64(r.tx[0].bufs.Phys)+le.Uint64(d[0:])%uint64(txSlot))
			w2 := le.Uint32(d[8:])
			le.PutUint32(d[8:], w2&^TxdLenMask|(w2&TxdLenMask)%(txSlot/2))
			r.putTx(0, d)
		}
		r.kickTx(0)
		if h, tl := r.Regs.Read32(TDH), r.Regs.Read32(TDT); h != tl {
			t.Fatalf("TDH %d, TDT %d: descriptors left", h, tl)
		}
		for _, s := range r.sent() {
			if len(s) < minFrame {
				t.Fatalf("a %d-byte frame went out with TCTL.PSP", len(s))
			}
		}
	})
}

// FuzzRxFrame sends arbitrary frames under arbitrary receive settings:
// the model must not panic, and a frame it stores has a sane write-back.
func FuzzRxFrame(f *testing.F) {
	f.Add(udpFrame(false, ourMAC, payloadBytes(100, 1), true), uint32(SrrctlDescAdvOne), uint32(rctlStd), uint32(0))
	f.Add(tcpFrame(true, ourMAC, payloadBytes(3000, 1), header.TCPFlagAck, true, 0), uint32(SrrctlDescHdrSplit|1), uint32(nicmodel.RctlLPE), uint32(MrqcEnableRSS|nicmodel.MrqcTCPIPv6))
	f.Add(tcpFrame(false, ourMAC, payloadBytes(100, 1), header.TCPFlagAck, true, 0), uint32(SrrctlDescHdrAlways|1<<SrrctlBSizeHdrShift), uint32(nicmodel.RctlSECRC), uint32(0))
	f.Fuzz(func(t *testing.T, frame []byte, srrctl, rctl, mrqc uint32) {
		r := newRig(t, 0x15f3)
		r.Regs.Write32(RLPML, 9018)
		r.Regs.Write32(nicmodel.MRQC, mrqc)
		r.Regs.Write32(nicmodel.RXCSUM, nicmodel.RxcsumIPOFL|nicmodel.RxcsumTUOFL|mrqc>>8&nicmodel.RxcsumPCSD)
		for q := range Queues {
			r.setupRx(q, 8, 1024, 0, rctl)
			r.Regs.Write32(RxQ(SRRCTL, q), srrctl&^SrrctlBSizePktMask|1) // 1 KiB buffers, as the rig has
		}
		if len(frame) >= 6 {
			copy(frame, ourMAC[:])
		}
		r.Wire.B().Send(frame)
		legacy := srrctl&SrrctlDescTypeMask == SrrctlDescLegacy
		for q := range Queues {
			h := int(r.Regs.Read32(RxQ(RDH, q)))
			if legacy {
				for i := range h {
					if d := r.rx[q].ring.Buf[i*descLen:]; d[12]&RxdStaDD == 0 || binary.LittleEndian.Uint16(d[8:]) > 1024 {
						t.Fatalf("legacy descriptor %d: % x", i, d[:descLen])
					}
				}
				continue
			}
			total := 0
			for i := range h {
				wb := r.rxDesc(q, i)
				if wb.status&RxdStaDD == 0 {
					t.Fatalf("queue %d descriptor %d before RDH not done", q, i)
				}
				if wb.len() > 1024 {
					t.Fatalf("length %d in a 1 KiB buffer", wb.len())
				}
				total += wb.len()
				if i == 0 {
					total += headerBytes(wb, srrctl)
				}
				if eop := wb.status&RxdStaEOP != 0; eop != (i == h-1) {
					t.Fatalf("descriptor %d of %d: EOP %v", i, h, eop)
				}
			}
			if h > 0 && (total < len(frame)-vlanTagLen || total > len(frame)+fcsLen) {
				t.Fatalf("stored %d bytes of a %d-byte frame", total, len(frame))
			}
		}
	})
}

// FuzzRegisters writes arbitrary values to arbitrary registers, then
// runs traffic both ways: nothing may panic or hang.
func FuzzRegisters(f *testing.F) {
	f.Add([]byte{0x00, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x28, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x14})
	f.Fuzz(func(t *testing.T, ops []byte) {
		r := newRig(t, 0x125b)
		r.setupRx(0, 8, 2048, SrrctlDescAdvOne, rctlStd)
		r.setupTx(0, 8)
		le := binary.LittleEndian
		for i := 0; i+8 <= len(ops) && i < 8*64; i += 8 {
			off := le.Uint32(ops[i:]) % regFileSize &^ 3
			if off == RDBAL || off == RDBAH || off == TDBAL || off == TDBAH {
				continue // keep the rings where the rig put them
			}
			r.Regs.Write32(off, le.Uint32(ops[i+4:]))
			r.Regs.Read32(off)
		}
		r.Wire.B().Send(udpFrame(false, ourMAC, payloadBytes(1200, 1), true))
		r.send(0, udpFrame(false, peerMAC, payloadBytes(100, 1), true), nil, 0, 0)
		r.kickTx(0)
		r.Regs.Read32(ICR)
		r.Regs.Read32(nicmodel.EICR)
	})
}

// headerBytes is how many bytes of the frame a first write-back says are
// in the header buffer.
func headerBytes(wb rxWB, srrctl uint32) int {
	always := srrctl&SrrctlDescTypeMask == SrrctlDescHdrAlways
	switch {
	case wb.status&RxdErrHBO != 0 && always:
		return int(srrctl&SrrctlBSizeHdrMask>>SrrctlBSizeHdrShift) * 64
	case wb.status&RxdErrHBO != 0:
		return 0
	case wb.dw0&RxdSPH != 0 || always:
		return wb.hdrLen()
	}
	return 0
}
