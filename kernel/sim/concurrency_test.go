package sim

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ether9/ether9/kernel"
	"github.com/ether9/ether9/kernel/sim/vtd"
	"github.com/ether9/ether9/pci"
)

// TestConcurrentUse runs CPUs pinning, syncing and freeing while device
// models DMA through the VT-d unit with translation off, for the race
// detector. Each worker checks its own data, so interference shows.
func TestConcurrentUse(t *testing.T) {
	m := NewMachine(Config{VTd: vtd.QEMU(), NonCoherentDMA: true})
	const workers = 4
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		a := pci.Addr{Dev: uint8(w + 1)}
		port := addBusMaster(t, m, a)
		q := m.IRQ(a)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- worker(m, port, q, w)
		}()
	}
	// The driver side meanwhile pokes the VT-d registers.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 200 {
			m.VTdRegs().Write64(vtd.IOTLB, vtd.IOTLB_IVT|vtd.IOTLB_GLOBAL<<vtd.IOTLB_IIRG_SHIFT)
			_ = m.VTdRegs().Read32(vtd.FSTS)
			m.Clock.Sleep(1)
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if st := m.Mem.Stats(); st.BytesRegistered != 0 || st.Misuses != 0 {
		t.Errorf("after all workers: %+v %v", st, m.Mem.Errors())
	}
}

func worker(m *Machine, port *DMAPort, q *IRQ, w int) error {
	for i := range 100 {
		buf := make([]byte, 1500)
		segs, err := m.Mem.Pin(buf)
		if err != nil {
			return err
		}
		r, err := m.Mem.Alloc(64, 64)
		if err != nil {
			return err
		}
		frame := []byte(fmt.Sprintf("worker %d frame %d", w, i))
		// The "device" writes a frame and a descriptor, then interrupts.
		done := make(chan error, 1)
		go func() {
			if err := port.Write(uint64(segs[0].Phys), frame); err != nil {
				done <- err
				return
			}
			done <- port.Write(uint64(r.Phys), []byte{1})
			q.Raise()
		}()
		if err := <-done; err != nil {
			return err
		}
		q.Wait(0)
		m.Mem.SyncForCPU(segs[0].Phys, len(buf))
		if string(buf[:len(frame)]) != string(frame) || r.Buf[0] != 1 {
			return fmt.Errorf("worker %d: frame %d reads %q", w, i, buf[:len(frame)])
		}
		if err := m.Mem.Unpin(buf); err != nil {
			return err
		}
		if err := m.Mem.Free(r); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkDMA measures a device's 1500-byte write through the VT-d unit
// with a warm IOTLB, and with translation off.
func BenchmarkDMA(b *testing.B) {
	for _, translate := range []bool{true, false} {
		b.Run(fmt.Sprintf("translate=%v", translate), func(b *testing.B) {
			cfg := vtd.QEMU()
			cfg.InvalidationCost = -1
			m := NewMachine(Config{VTd: cfg, NoFlushCheck: true})
			a := pci.Addr{Dev: 3}
			port := addBusMaster(b, m, a)
			buf := make([]byte, 2*kernel.PageSize)
			segs, err := m.Mem.Pin(buf)
			if err != nil {
				b.Fatal(err)
			}
			addr := uint64(segs[0].Phys)
			if translate {
				h := &hostTables{t: b, m: m}
				base := segs[0].Phys &^ (kernel.PageSize - 1)
				for i := range kernel.PhysAddr(3) {
					h.mapPage(port.Source(), 1, 0x1000_0000+uint64(i)*kernel.PageSize, base+i*kernel.PageSize, 3)
				}
				enableVTd(b, m.VTdRegs(), h.root.Phys)
				addr = 0x1000_0000 + uint64(segs[0].Phys%kernel.PageSize)
			}
			frame := make([]byte, 1500)
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				if err := port.Write(addr, frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPin measures Pin plus Unpin of a packet buffer with many other
// buffers registered, as an RX ring keeps them.
func BenchmarkPin(b *testing.B) {
	m := NewMemory()
	keep := make([][]byte, 4096)
	for i := range keep {
		keep[i] = make([]byte, 2048)
		if _, err := m.Pin(keep[i]); err != nil {
			b.Fatal(err)
		}
	}
	buf := make([]byte, 2048)
	for b.Loop() {
		if _, err := m.Pin(buf); err != nil {
			b.Fatal(err)
		}
		if err := m.Unpin(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRxCycle measures what memory does for one received frame of a
// 256-buffer ring, as a driver's copybreak path drives it: the device's
// write, SyncForCPU, SyncForDevice. Coherent memory that checks ownership
// still takes the syncs to track who owns the bytes.
func BenchmarkRxCycle(b *testing.B) {
	for _, mode := range []string{"coherent", "noncoherent", "coherent-checked"} {
		for _, n := range []int{64, 1514} {
			b.Run(fmt.Sprintf("%s/%dB", mode, n), func(b *testing.B) {
				m := NewMemory()
				m.SetCoherent(mode != "noncoherent")
				m.SetCheckOwnership(mode == "coherent-checked")
				const ring = 256
				var phys [ring]kernel.PhysAddr
				for i := range phys {
					segs, err := m.Pin(make([]byte, 2048))
					if err != nil {
						b.Fatal(err)
					}
					phys[i] = segs[0].Phys
				}
				frame := make([]byte, n)
				b.SetBytes(int64(n))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					p := phys[i%ring]
					if err := m.DeviceWrite(p, frame); err != nil {
						b.Fatal(err)
					}
					m.SyncForCPU(p, n)
					m.SyncForDevice(p, n)
					i++
				}
				if st := m.Stats(); st.Misuses != 0 {
					b.Fatalf("misuses: %v", m.Errors())
				}
			})
		}
	}
}
