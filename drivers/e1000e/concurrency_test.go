package e1000e

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"gvisor.dev/gvisor/pkg/buffer"
)

// TestConcurrentQueueAndControl runs the RX side, the TX side and the
// control side in their own goroutines, as the link endpoint and the
// control files do; under -race it proves the driver's shared state is
// synchronised. The test plays the device inside the RX and TX goroutines.
func TestConcurrentQueueAndControl(t *testing.T) {
	r := newRig(t, 0x10D3)
	d := r.d
	const rounds = 2000
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // RX: complete a frame, poll it
		defer wg.Done()
		frame := bytes.Repeat([]byte{5}, 300)
		for k := 0; k < rounds; k++ {
			r.complete(t, d.q.rx.Clean(), frame, RXD_STAT_DD|RXD_STAT_EOP, len(frame))
			nictest.Receive(&d.q, 8, func(p *nic.RxPacket) { p.Data.Release() })
		}
	}()
	go func() { // TX: send, complete everything in flight, reclaim
		defer wg.Done()
		for k := 0; k < rounds; k++ {
			p := &nic.TxPacket{Data: buffer.MakeWithData(bytes.Repeat([]byte{6}, 600+k%700))}
			if n, err := d.q.Transmit([]*nic.TxPacket{p}); n != 1 || err != nil {
				p.Data.Release()
			}
			d.q.txMu.Lock()
			for i := 0; i < d.q.tx.Descs.Len(); i++ {
				d.q.tx.Descs.At(i)[12] |= TXD_STAT_DD
			}
			d.q.txMu.Unlock()
			d.q.Reclaim()
		}
	}()
	go func() { // control and statistics
		defer wg.Done()
		for k := 0; k < rounds/4; k++ {
			d.Ctl(fmt.Sprintf("copybreak %d", k%2049))
			d.Ctl([]string{"tso on", "tso off", "tso auto"}[k%3])
			d.Ctl([]string{"copybreak-mode sync", "copybreak-mode unmap"}[k%2])
			_ = d.Stats()
			_ = d.Features()
			_ = d.Link()
		}
	}()
	wg.Wait()
	if d.q.rx.Stats.Frames.Load() != rounds {
		t.Errorf("received %d of %d", d.q.rx.Stats.Frames.Load(), rounds)
	}
	r.Close(t)
}
