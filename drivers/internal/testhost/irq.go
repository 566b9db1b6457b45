package testhost

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ether9/ether9/drivers/internal/nictest"
	"github.com/ether9/ether9/drivers/nic"
	"github.com/ether9/ether9/kernel/sim"
	"github.com/ether9/ether9/pci"
)

// Bounds of the interrupt checks: a sleep that must end does within
// irqDeadline (or the check fails with the counters), and sleeps that
// must last until their interrupt block up to irqSleep of real time.
const (
	irqDeadline = 10 * time.Second
	irqSleep    = 30 * time.Second
)

// IRQRig is what the interrupt checks need of a host whose driver runs
// its function's INTx in legacy mode: the machine, the function, its NIC
// and a way to land one frame on queue q.
type IRQRig struct {
	Machine *sim.Machine
	Addr    pci.Addr
	NIC     nic.NIC
	Send    func(q int)
}

func (r IRQRig) irq() *sim.IRQ { return r.Machine.IRQ(r.Addr) }

// counters says what the line and the driver counted, for failures.
func (r IRQRig) counters(t testing.TB) string {
	irq := r.irq()
	wakes, timeouts := irq.Counts()
	cmd, _ := r.Machine.Bus.ReadConfig(r.Addr, 0x04, 2)
	status, _ := r.Machine.Bus.ReadConfig(r.Addr, 0x06, 2)
	s := fmt.Sprintf("line: level %v raised %d wakes %d timeouts %d, command %#x status %#x; driver:", irq.Level(), irq.Raised(), wakes, timeouts, cmd, status)
	for _, st := range r.NIC.Stats() {
		if strings.HasPrefix(st.Name, "irq_") || strings.Contains(st.Name, "_irq_") {
			s += fmt.Sprintf(" %s %d", st.Name, st.Value)
		}
	}
	return s
}

// drain polls queue q until it is empty and returns the frames.
func (r IRQRig) drain(q int) int {
	n := 0
	for {
		got := nictest.Receive(r.NIC.Queues()[q], 64, func(p *nic.RxPacket) { p.Data.Release() })
		if got == 0 {
			return n
		}
		n += got
	}
}

// sleep runs queue q's Wait(timeout) and delivers its result.
func (r IRQRig) sleep(q int, timeout time.Duration) <-chan bool {
	c := make(chan bool, 1)
	go func() { c <- r.NIC.Queues()[q].Wait(timeout) }()
	return c
}

// expect waits for a sleep's result, failing after irqDeadline.
func (r IRQRig) expect(t testing.TB, c <-chan bool, want bool, what string) {
	t.Helper()
	select {
	case got := <-c:
		if got != want {
			t.Fatalf("%s: Wait returned %v, want %v (%s)", what, got, want, r.counters(t))
		}
	case <-time.After(irqDeadline):
		t.Fatalf("%s: Wait did not return in %v (%s)", what, irqDeadline, r.counters(t))
	}
}

// CheckIRQ checks a driver's legacy interrupt on the simulated machine:
//
//   - an idle queue's sleeps all time out, none counts as a wake-up;
//   - a frame for a sleeping queue ends its sleep, through the line;
//   - a frame that landed after the queue's last empty poll, before it
//     slept, ends the sleep at once (no lost edge);
//   - a frame for a queue that was polling when another queue's wake-up
//     read the causes ends that queue's next sleep at once;
//   - with every queue asleep on the one line, each frame wakes its own
//     queue and no other;
//   - a line masked with Interrupt Disable never wakes a queue, though
//     the device asserts it (Interrupt Status set); unmasked, it does.
func CheckIRQ(t *testing.T, r IRQRig) {
	queues := len(r.NIC.Queues())
	irq := r.irq()
	for q := range queues {
		r.drain(q)
	}

	// Idle: count the sleeps.
	const idle = 20
	before := nictest.Stat(t, r.NIC.Stats(), "irq_wakes")
	lineWakes, _ := irq.Counts()
	for i := range idle {
		if r.NIC.Queues()[i%queues].Wait(10 * time.Millisecond) {
			t.Fatalf("idle sleep %d woken (%s)", i, r.counters(t))
		}
	}
	if w := nictest.Stat(t, r.NIC.Stats(), "irq_wakes"); w != before {
		t.Errorf("%d wake-ups in %d idle sleeps (%s)", w-before, idle, r.counters(t))
	}
	if w, _ := irq.Counts(); w != lineWakes {
		t.Errorf("the line was taken %d times while idle (%s)", w-lineWakes, r.counters(t))
	}

	// Everything below sleeps until the interrupt it waits for.
	irq.SetRealWait(irqSleep)
	defer irq.SetRealWait(0)

	// A frame for a sleeping queue.
	last := queues - 1
	c := r.sleep(last, irqSleep)
	time.Sleep(10 * time.Millisecond) // most likely asleep by now; if not, the frame is pending when it arms
	r.Send(last)
	r.expect(t, c, true, "a frame for a sleeping queue")
	if n := r.drain(last); n != 1 {
		t.Errorf("polled %d frames after the wake-up, want 1", n)
	}

	// No lost edge: the frame lands between the last empty poll and the
	// sleep.
	r.Send(0)
	r.expect(t, r.sleep(0, irqSleep), true, "a frame that landed before the sleep")
	r.drain(0)

	if queues >= 2 {
		checkShared(t, r, queues)
	}

	// Masked, last: the sleeps above left the line masked by the driver
	// side; one that times out unmasks it, as a fresh line is.
	irq.SetRealWait(0)
	if r.NIC.Queues()[0].Wait(time.Millisecond) {
		t.Fatalf("woken before any frame (%s)", r.counters(t))
	}
	cmd, _ := r.Machine.Bus.ReadConfig(r.Addr, 0x04, 2)
	if err := r.Machine.Bus.WriteConfig(r.Addr, 0x04, 2, cmd|1<<10); err != nil {
		t.Fatal(err)
	}
	r.Send(0)
	if r.NIC.Queues()[0].Wait(50 * time.Millisecond) {
		t.Fatalf("a line masked with Interrupt Disable woke the queue (%s)", r.counters(t))
	}
	if status, _ := r.Machine.Bus.ReadConfig(r.Addr, 0x06, 2); status&(1<<3) == 0 || !irq.Level() {
		t.Errorf("frame pending, causes enabled: Interrupt Status clear (%s)", r.counters(t))
	}
	if err := r.Machine.Bus.WriteConfig(r.Addr, 0x04, 2, cmd&^(1<<10)); err != nil {
		t.Fatal(err)
	}
	r.expect(t, r.sleep(0, irqSleep), true, "unmasked with a frame pending")
	if n := r.drain(0); n != 1 {
		t.Errorf("polled %d frames after the wake-up, want 1", n)
	}
}

// checkShared is CheckIRQ's part for several queues on the one line.
func checkShared(t *testing.T, r IRQRig, queues int) {
	// A cause taken while its queue polled: queue 1's wake-up reads the
	// causes of both frames; queue 0, not asleep then, sleeps after.
	c := r.sleep(1, irqSleep)
	time.Sleep(10 * time.Millisecond)
	r.Send(0)
	r.Send(1)
	r.expect(t, c, true, "queue 1's frame")
	r.expect(t, r.sleep(0, irqSleep), true, "a frame whose cause another queue's wake-up read")
	if r.drain(0) == 0 {
		// A model that defers receive DMA (DeferRx) writes the frame
		// when its queue next touches the device; the kept cause's
		// wake-up touched none, so the frame lands as the queue arms
		// its interrupt for the next sleep, which then ends at once.
		r.expect(t, r.sleep(0, irqSleep), true, "a held frame, as its queue arms")
		if n := r.drain(0); n != 1 {
			t.Errorf("queue 0 polled %d frames after arming, want 1 (%s)", n, r.counters(t))
		}
	}
	r.drain(1)

	// One line, every queue asleep: each frame wakes its own queue.
	sleeps := make([]<-chan bool, queues)
	for q := range queues {
		sleeps[q] = r.sleep(q, irqSleep)
	}
	time.Sleep(10 * time.Millisecond)
	// From both ends: the last queue, the first, the one before the
	// last, ...
	order := make([]int, queues)
	for i := range order {
		if i%2 == 0 {
			order[i] = queues - 1 - i/2
		} else {
			order[i] = i / 2
		}
	}
	for i, q := range order {
		r.Send(q)
		r.expect(t, sleeps[q], true, fmt.Sprintf("queue %d's frame", q))
		time.Sleep(10 * time.Millisecond) // a wrong wake-up would show by now
		for _, o := range order[i+1:] {
			select {
			case <-sleeps[o]:
				t.Fatalf("queue %d's frame woke queue %d too (%s)", q, o, r.counters(t))
			default:
			}
		}
		if n := r.drain(q); n != 1 {
			t.Errorf("queue %d polled %d frames, want 1", q, n)
		}
	}
	for q := range queues {
		if nictest.Stat(t, r.NIC.Stats(), fmt.Sprintf("q%d_irq_wake", q)) == 0 {
			t.Errorf("queue %d: no wake-up counted (%s)", q, r.counters(t))
		}
	}
}

// UDPFrame is an n-byte IPv4/UDP frame to dst and UDP port port
// carrying seq, its payload bytes counting from seq.
func UDPFrame(dst [6]byte, port uint16, n int, seq uint32) []byte {
	f := make([]byte, n)
	copy(f, dst[:])
	copy(f[6:], []byte{2, 0, 0, 0, 0, 2})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(n-14))
	ip[8], ip[9] = 64, 17
	copy(ip[12:], []byte{10, 0, 0, 2, 10, 0, 0, 1})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	sum = sum>>16 + sum&0xffff
	sum += sum >> 16
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	u := ip[20:]
	binary.BigEndian.PutUint16(u[0:], 40000)
	binary.BigEndian.PutUint16(u[2:], port)
	binary.BigEndian.PutUint16(u[4:], uint16(n-34))
	binary.BigEndian.PutUint32(u[8:], seq)
	for i := 46; i < n; i++ {
		f[i] = byte(seq) + byte(i)
	}
	return f
}
