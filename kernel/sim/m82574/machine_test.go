package m82574

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/iommu"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/kernel/sim/wire"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
)

// station is one simulated machine with the VT-d unit on, a model behind
// its own domain and a small polled driver written for this test: RX ring
// of mapped buffers, TX ring with one mapped bounce buffer per slot.
type station struct {
	t    *testing.T
	m    *sim.Machine
	nic  *NIC
	regs kernel.Regs
	iom  *iommu.Unit
	dma  *iommu.Domain

	rx, tx      kernel.Coherent
	rxBufs      [][]byte
	rxAddrs     []kernel.DMAAddr
	txBufs      [][]byte
	txAddrs     []kernel.DMAAddr
	rxNext      int
	txNext      int
	nonCoherent bool
}

func newStation(t *testing.T, pers Personality, mac [6]byte, nonCoherent bool) *station {
	t.Helper()
	m, err := sim.New(sim.Config{VTd: vtd.QEMU(), NonCoherentDMA: nonCoherent})
	if err != nil {
		t.Fatal(err)
	}
	n, err := Plug(m, nicAddr, Options{Personality: pers, MAC: mac, DeferRx: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Bus.WriteConfig(nicAddr, 4, 2, sim.CmdMemory|sim.CmdBusMaster); err != nil {
		t.Fatal(err)
	}
	regs, err := m.Bus.Regs(nicAddr, 0)
	if err != nil {
		t.Fatal(err)
	}
	u, err := iommu.New(m.VTdRegs(), m.Mem, iommu.Options{Clock: m.Clock})
	if err != nil {
		t.Fatal(err)
	}
	dom, err := u.Domain(iommu.SourceID(nicAddr.Bus, nicAddr.Dev, nicAddr.Fn))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Enable(); err != nil {
		t.Fatal(err)
	}
	s := &station{t: t, m: m, nic: n, regs: regs, iom: u, dma: dom, nonCoherent: nonCoherent}
	s.setup()
	return s
}

func (s *station) must(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

func (s *station) setup() {
	var err error
	s.rx, err = s.dma.AllocCoherent(ringSize * descLen)
	s.must(err)
	s.tx, err = s.dma.AllocCoherent(ringSize * descLen)
	s.must(err)
	for range ringSize {
		b := make([]byte, 2048)
		a, err := s.dma.Map(b, kernel.FromDevice)
		s.must(err)
		s.rxBufs, s.rxAddrs = append(s.rxBufs, b), append(s.rxAddrs, a)
		tb := make([]byte, 2048)
		ta, err := s.dma.Map(tb, kernel.ToDevice)
		s.must(err)
		s.txBufs, s.txAddrs = append(s.txBufs, tb), append(s.txAddrs, ta)
	}
	for i := range ringSize {
		s.arm(i)
	}
	r := s.regs
	r.Write32(nicmodel.CTRL, r.Read32(nicmodel.CTRL)|nicmodel.CtrlSLU)
	r.Write32(RDBAL, uint32(s.rx.Addr))
	r.Write32(RDBAH, uint32(uint64(s.rx.Addr)>>32))
	r.Write32(RDLEN, ringSize*descLen)
	r.Write32(RDH, 0)
	r.Write32(RDT, ringSize-1)
	r.Write32(nicmodel.RFCTL, RfctlEXSTEN)
	r.Write32(nicmodel.RCTL, nicmodel.RctlEN|nicmodel.RctlBAM|nicmodel.RctlSECRC)
	r.Write32(TDBAL, uint32(s.tx.Addr))
	r.Write32(TDBAH, uint32(uint64(s.tx.Addr)>>32))
	r.Write32(TDLEN, ringSize*descLen)
	r.Write32(TDH, 0)
	r.Write32(TDT, 0)
	r.Write32(nicmodel.TCTL, nicmodel.TctlEN|nicmodel.TctlPSP)
}

func (s *station) arm(i int) {
	d := s.rx.Buf[i*descLen : (i+1)*descLen]
	clear(d)
	binary.LittleEndian.PutUint64(d, uint64(s.rxAddrs[i]))
}

// send queues one frame and waits for its DD, as a polled driver would.
func (s *station) send(f []byte) error {
	i := s.txNext
	copy(s.txBufs[i], f)
	if err := s.dma.SyncForDevice(s.txAddrs[i], len(f), kernel.ToDevice); err != nil {
		return err
	}
	d := dataTx(uint64(s.txAddrs[i]), len(f), TxdEOP|TxdIFCS|TxdRS, 0)
	copy(s.tx.Buf[i*descLen:], d[:])
	s.txNext = (i + 1) % ringSize
	s.regs.Write32(TDT, uint32(s.txNext))
	if s.tx.Buf[i*descLen+12]&TxdStaDD == 0 {
		return fmt.Errorf("TX descriptor %d not done", i)
	}
	return nil
}

// poll reads the interrupt causes, as an interrupt handler does (and so
// lets the model move waiting frames into the ring), then takes every done
// frame off the RX ring and hands its buffer back.
func (s *station) poll(deliver func([]byte)) int {
	s.regs.Read32(nicmodel.ICR)
	got := 0
	for {
		i := s.rxNext
		d := s.rx.Buf[i*descLen : (i+1)*descLen]
		if binary.LittleEndian.Uint32(d[8:])&RxdDD == 0 {
			return got
		}
		l := int(binary.LittleEndian.Uint16(d[12:]))
		s.must(s.dma.SyncForCPU(s.rxAddrs[i], 2048, kernel.FromDevice))
		deliver(s.rxBufs[i][:l])
		s.must(s.dma.SyncForDevice(s.rxAddrs[i], 2048, kernel.FromDevice))
		s.arm(i)
		s.regs.Write32(RDT, uint32(i))
		s.rxNext = (i + 1) % ringSize
		got++
	}
}

// Two machines, each model behind its own VT-d domain, joined by a wire
// with a capture: frames cross both ways concurrently, arrive intact, the
// capture holds them all, and no DMA faults.
func TestTwoMachinesOverWire(t *testing.T) {
	for _, nonCoherent := range []bool{false, true} {
		t.Run(fmt.Sprintf("noncoherent=%v", nonCoherent), func(t *testing.T) {
			var capture bytes.Buffer
			w, err := wire.New(wire.Options{Pcap: &capture})
			if err != nil {
				t.Fatal(err)
			}
			a := newStation(t, M82574L, ourMAC, nonCoherent)
			b := newStation(t, I219LM, peerMAC, nonCoherent)
			a.nic.Attach(w.A())
			b.nic.Attach(w.B())

			const frames = 200
			// Frame i of a side carries i in its first payload bytes, so
			// the receiver can check every frame that was not dropped.
			frame := func(dst, src [6]byte, seed byte, i int) []byte {
				p := payloadBytes(50+i*7, seed+byte(i))
				binary.BigEndian.PutUint16(p, uint16(i))
				f := udp4(dst, p)
				copy(f[6:12], src[:])
				return f
			}
			var (
				senders, pollers sync.WaitGroup
				sent             atomic.Int32
				errs             [2]error
				got              [2][][]byte
			)
			stations := [2]*station{a, b}
			for k, from := range stations {
				to := stations[1-k]
				senders.Add(1)
				go func() {
					defer senders.Done()
					defer sent.Add(1)
					for i := range frames {
						if err := from.send(frame(to.nic.mac, from.nic.mac, byte(k), i)); err != nil {
							errs[k] = err
							return
						}
						runtime.Gosched()
					}
				}()
				// The receiver drains its ring while the other side sends.
				pollers.Add(1)
				go func() {
					defer pollers.Done()
					for {
						done := sent.Load() == 2
						if to.poll(func(f []byte) { got[1-k] = append(got[1-k], bytes.Clone(f)) }) == 0 {
							if done {
								return
							}
							to.m.IRQ(nicAddr).Wait(time.Millisecond)
						}
					}
				}()
			}
			senders.Wait()
			pollers.Wait()
			if errs[0] != nil || errs[1] != nil {
				t.Fatal(errs)
			}
			for k, to := range stations {
				from := stations[1-k]
				fs := got[k]
				drops := to.nic.Counters().RxNoDescriptor
				if uint64(len(fs))+drops != frames || len(fs) == 0 {
					t.Fatalf("%s received %d frames and dropped %d, want %d in all", to.nic.pers.Name, len(fs), drops, frames)
				}
				last := -1
				for _, f := range fs {
					i := int(binary.BigEndian.Uint16(f[l4Off4+8:]))
					if i <= last || !bytes.Equal(f, frame(to.nic.mac, from.nic.mac, byte(1-k), i)) {
						t.Fatalf("%s: frame %d (after %d) differs or is out of order", to.nic.pers.Name, i, last)
					}
					last = i
				}
			}
			for _, s := range []*station{a, b} {
				if f := s.iom.Faults(); len(f) != 0 {
					t.Fatalf("VT-d faults: %v", f)
				}
				if c := s.nic.Counters(); c.RxDMAFaults+c.TxDMAFaults != 0 {
					t.Fatalf("counters %+v", c)
				}
			}
			if err := w.Err(); err != nil {
				t.Fatal(err)
			}
			_, pkts, err := wire.ReadPcap(&capture)
			if err != nil {
				t.Fatal(err)
			}
			if len(pkts) != 2*frames { // the wire carries what was dropped at the receiver too
				t.Fatalf("capture holds %d frames, want %d", len(pkts), 2*frames)
			}
			for _, p := range pkts {
				if len(p.Data) < nicmodel.MinFrame || header.Ethernet(p.Data).Type() != header.IPv4ProtocolNumber {
					t.Fatalf("captured frame of %d bytes, type %#x", len(p.Data), header.Ethernet(p.Data).Type())
				}
			}
		})
	}
}

// DMA to an IOVA the driver never mapped is refused by the VT-d unit,
// which records the fault with the model's source id; the descriptor
// still completes, as on hardware.
func TestDMAFaultRecordedByVTd(t *testing.T) {
	w, err := wire.New(wire.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newStation(t, M82574L, ourMAC, false)
	s.nic.Attach(w.A())
	s.nic.InjectRx(RxFault{Frames: 1, DMAFault: true})
	w.B().Send(udp4(ourMAC, payloadBytes(100, 0)))
	s.regs.Read32(nicmodel.ICR)
	if binary.LittleEndian.Uint32(s.rx.Buf[8:])&RxdDD == 0 {
		t.Fatal("descriptor not completed")
	}
	faults := s.iom.Faults()
	if len(faults) == 0 {
		t.Fatal("no VT-d fault recorded")
	}
	f := faults[0]
	if f.Source != iommu.SourceID(nicAddr.Bus, nicAddr.Dev, nicAddr.Fn) || !f.Write || f.Addr != unmappedIOVA&^0xfff {
		t.Fatalf("fault %+v", f)
	}
}
