package mi225

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/kernel/sim/nicmodel/nicmodeltest"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

const macLen = header.EthernetMinimumSize

func TestTxChecksumInsertion(t *testing.T) {
	for _, c := range []struct {
		name  string
		v6    bool
		tcp   bool
		popts uint32
	}{
		{"tcp4", false, true, TxdPoptsTXSM | TxdPoptsIXSM},
		{"udp4", false, false, TxdPoptsTXSM | TxdPoptsIXSM},
		{"tcp6", true, true, TxdPoptsTXSM},
		{"udp6", true, false, TxdPoptsTXSM},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, 0x125b)
			r.setupTx(0, 8)
			var f []byte
			tucmd := uint32(TucmdL4UDP)
			if c.tcp {
				tucmd = TucmdL4TCP
				f = tcpFrame(c.v6, peerMAC, payloadBytes(333, 1), header.TCPFlagAck|header.TCPFlagPsh, false, 353)
			} else {
				f = udpFrame(c.v6, peerMAC, payloadBytes(333, 1), false)
			}
			ipLen := header.IPv4MinimumSize
			if c.v6 {
				ipLen = header.IPv6MinimumSize
			} else {
				tucmd |= TucmdIPv4
			}
			ctx := ctxTx(macLen, ipLen, 0, tucmd, 0, 0, 0)
			i := r.send(0, f, &ctx, 0, c.popts)
			r.kickTx(0)
			out := r.sent()
			if len(out) != 1 || len(out[0]) != len(f) {
				t.Fatalf("sent %d frames", len(out))
			}
			nicmodeltest.CheckL4(t, out[0], c.v6)
			if r.txStatus(0, i)&TxdStaDD == 0 {
				t.Fatal("DD not written back")
			}
			if h := r.Regs.Read32(TDH); h != 2 {
				t.Fatalf("TDH %d, want 2", h)
			}
			if v := r.Regs.Read32(nicmodel.GPTC); v != 1 {
				t.Fatalf("GPTC %d", v)
			}
			if v := r.Regs.Read32(nicmodel.GOTCL); v != uint32(len(f)+fcsLen) {
				t.Fatalf("GOTCL %d, want %d", v, len(f)+fcsLen)
			}
		})
	}
}

func TestTxTSO(t *testing.T) {
	for _, c := range []struct {
		name    string
		v6      bool
		payload int
		mss     int
	}{
		{"ipv4", false, 20000, 1448},
		{"ipv6", true, 9000, 1440},
		{"ipv4 exact multiple", false, 4 * 1000, 1000},
		{"ipv4 one segment", false, 500, 1448},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, 0x15f3)
			r.setupTx(0, 8)
			payload := payloadBytes(c.payload, 3)
			ipLen := header.IPv4MinimumSize
			tucmd := uint32(TucmdL4TCP)
			if c.v6 {
				ipLen = header.IPv6MinimumSize
			} else {
				tucmd |= TucmdIPv4
			}
			flags := header.TCPFlagAck | header.TCPFlagPsh | header.TCPFlagFin | header.TCPFlagCwr
			f := tcpFrame(c.v6, peerMAC, payload, flags, false, 0)
			hdr := macLen + ipLen + header.TCPMinimumSize
			ctx := ctxTx(macLen, ipLen, 0, tucmd, header.TCPMinimumSize, c.mss, 1)
			// The packet is given in two buffers, split inside the payload.
			r.putTx(0, ctx)
			cut := hdr + min(700, c.payload/2)
			a1 := r.txBuf(0, 1, f[:cut])
			a2 := r.txBuf(0, 2, f[cut:])
			ol := TxdIdx | TxdPoptsTXSM | uint32(c.payload)<<TxdPaylenShift
			if !c.v6 {
				ol |= TxdPoptsIXSM
			}
			r.putTx(0, dataTx(a1, cut, TxdCmdTSE, ol))
			last := r.putTx(0, dataTx(a2, len(f)-cut, TxdCmdTSE|TxdCmdEOP|TxdCmdRS, 0))
			r.kickTx(0)
			out := r.sent()
			nicmodeltest.CheckSegments(t, out, nicmodeltest.TSOCase{
				V6: c.v6, MSS: c.mss, Seq: 1000, ID: 0x1234, Flags: flags, Payload: payload,
			})
			want := len(out)
			if r.txStatus(0, last)&TxdStaDD == 0 {
				t.Fatal("DD not written back")
			}
			if v := r.Regs.Read32(nicmodel.TSCTC); v != 1 {
				t.Fatalf("TSCTC %d, want 1", v)
			}
			if v := r.Regs.Read32(nicmodel.GPTC); v != uint32(want) {
				t.Fatalf("GPTC %d, want %d", v, want)
			}
		})
	}
}

func TestTxBadOffloadSetUp(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.setupTx(0, 8)
	f := tcpFrame(false, peerMAC, payloadBytes(3000, 1), header.TCPFlagAck, false, 0)
	ctx := ctxTx(macLen, 20, 0, TucmdL4TCP|TucmdIPv4, 20, 1448, 0)
	// PAYLEN that is not the payload's length.
	r.send(0, f, &ctx, TxdCmdTSE, TxdPoptsTXSM|uint32(100)<<TxdPaylenShift)
	// A checksum asked of a context slot never loaded.
	r.send(0, f[:200], nil, 0, TxdIdx|TxdPoptsTXSM)
	// A single send whose PAYLEN is not its length.
	r.send(0, f[:200], nil, 0, 199<<TxdPaylenShift)
	r.kickTx(0)
	if out := r.sent(); len(out) != 0 {
		t.Fatalf("%d frames sent from bad set-ups", len(out))
	}
	if c := r.nic.Counters(); c.TxBadDesc != 3 || c.TxPackets != 3 {
		t.Fatalf("counters %+v", c)
	}
	if h := r.Regs.Read32(TDH); h != 4 {
		t.Fatalf("TDH %d: bad packets must still be consumed", h)
	}
}

func TestTxVLANInsertAndPadding(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.setupTx(0, 8)
	f := udpFrame(false, peerMAC, payloadBytes(4, 1), true) // 46 bytes
	ctx := ctxTx(macLen, 20, 0x0123, TucmdIPv4, 0, 0, 0)
	r.send(0, f, &ctx, TxdCmdVLE, 0)
	r.kickTx(0)
	out := r.sent()
	if len(out) != 1 {
		t.Fatalf("sent %d", len(out))
	}
	g := out[0]
	if len(g) != minFrame {
		t.Fatalf("length %d, want padding to %d", len(g), minFrame)
	}
	if binary.BigEndian.Uint16(g[12:]) != 0x8100 || binary.BigEndian.Uint16(g[14:]) != 0x0123 {
		t.Fatalf("tag %x, want 8100 0123", g[12:16])
	}
	if !bytes.Equal(g[:12], f[:12]) || !bytes.Equal(g[16:16+len(f)-12], f[12:]) {
		t.Fatal("frame around the tag changed")
	}
}

func TestTxQueuesAndInterrupts(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.Regs.Write32(nicmodel.GPIE, nicmodel.GpieMultiMSIX)
	r.Regs.Write32(nicmodel.IVAR0, uint32(nicmodel.IvarValid|0)<<8|uint32(nicmodel.IvarValid|1)<<24)
	r.Regs.Write32(nicmodel.IVAR0+4, uint32(nicmodel.IvarValid|2)<<8|uint32(nicmodel.IvarValid|3)<<24)
	r.Regs.Write32(nicmodel.EIMS, 0xf)
	for q := range Queues {
		r.setupTx(q, 8)
	}
	for q := range Queues {
		for k := range q + 1 {
			r.send(q, udpFrame(false, peerMAC, payloadBytes(100+k, byte(q)), true), nil, 0, 0)
		}
		r.kickTx(q)
	}
	if out := r.sent(); len(out) != 1+2+3+4 {
		t.Fatalf("sent %d frames, want 10", len(out))
	}
	c := r.nic.Counters()
	for q := range Queues {
		if h := r.Regs.Read32(TxQ(TDH, q)); h != uint32(q+1) {
			t.Errorf("TDH%d = %d, want %d", q, h, q+1)
		}
		if c.Vectors[q] == 0 {
			t.Errorf("no TX message on vector %d", q)
		}
	}
	// A disabled queue does not move.
	r.Regs.Write32(TxQ(TXDCTL, 1), 0)
	r.send(1, udpFrame(false, peerMAC, payloadBytes(100, 1), true), nil, 0, 0)
	r.kickTx(1)
	if out := r.sent(); len(out) != 0 {
		t.Fatal("a disabled queue transmitted")
	}
	r.Regs.Write32(TxQ(TXDCTL, 1), DctlEnable)
	if out := r.sent(); len(out) != 1 {
		t.Fatal("enabling the queue did not send what was waiting")
	}
}

func TestTxWithoutLinkDrops(t *testing.T) {
	r := newRig(t, 0x15f3)
	r.setupTx(0, 8)
	if err := r.Wire.SetLink(false, 2500); err != nil {
		t.Fatal(err)
	}
	i := r.send(0, udpFrame(false, peerMAC, payloadBytes(100, 1), true), nil, 0, 0)
	r.kickTx(0)
	if c := r.nic.Counters(); c.TxNoLink != 1 || c.TxFrames != 0 {
		t.Fatalf("counters %+v", c)
	}
	if r.txStatus(0, i)&TxdStaDD == 0 {
		t.Fatal("descriptor not completed")
	}
}
