package nicmodel

import (
	"encoding/binary"
	"sync"

	"github.com/ether9/ether9/kernel/sim"
)

// MSI-X (PCI Local Bus Specification 3.0, 6.8.2). The capability's
// Message Control holds MSI-X Enable (bit 15) and Function Mask (bit 14);
// the table, in a memory BAR, holds four dwords an entry: message address
// low and high, message data, vector control (bit 0: Mask). The pending
// bit array holds a bit per entry. A vector's event sends the entry's
// message when MSI-X is enabled and neither the function nor the entry
// is masked; otherwise the vector's pending bit is set, and the message
// goes out, the bit cleared, as soon as the entry and the function are
// unmasked. The table and the pending bits are not reset by the parts'
// software resets (CTRL.RST): only a PCI reset, which the model has not.
const (
	msixCtlEnable  = 1 << 15
	msixCtlFnMask  = 1 << 14
	msixEntryMask  = 1 // vector control: Mask
	msixEntryDW    = 4 // dwords an entry
	msixMaxVectors = 64
)

// Messenger is what sends a function's interrupt messages: the
// simulated machine's line for the function (sim.IRQ), which hands them
// to the machine's local APIC.
type Messenger interface {
	Message(addr uint64, data uint32)
}

// MSIXTable is a function's MSI-X vector table and pending bit array,
// tied to its capability. It serialises its own accesses; copies share
// the table.
type MSIXTable struct{ t *msixTable }

type msixTable struct {
	mu      sync.Mutex
	dw      []uint32
	pending uint64 // the pending bit array
	pbaOff  uint32 // the pending bit array's offset in the BAR

	cfg  *sim.ConfigSpace // Message Control, at cap+2
	cap  int
	send Messenger // nil: messages go nowhere
}

// NewMSIXTable returns a table of vectors entries (at most 64), each
// masked as after reset, at offset 0 of its BAR and its pending bit array
// at pba.
func NewMSIXTable(vectors int, pba uint32) MSIXTable {
	t := &msixTable{dw: make([]uint32, min(vectors, msixMaxVectors)*msixEntryDW), pbaOff: pba}
	for i := 3; i < len(t.dw); i += msixEntryDW {
		t.dw[i] = msixEntryMask
	}
	return MSIXTable{t}
}

// Connect ties the table to the MSI-X capability at cap in cfg and sends
// its messages with send.
func (x MSIXTable) Connect(cfg *sim.ConfigSpace, cap int, send Messenger) {
	x.t.mu.Lock()
	defer x.t.mu.Unlock()
	x.t.cfg, x.t.cap, x.t.send = cfg, cap, send
}

// Vectors is the number of entries.
func (x MSIXTable) Vectors() int { return len(x.t.dw) / msixEntryDW }

// Pending is the pending bit array.
func (x MSIXTable) Pending() uint64 {
	x.t.mu.Lock()
	defer x.t.mu.Unlock()
	return x.t.pending
}

// Enabled reports whether MSI-X Enable is set: the function signals
// through the table and not through its MSI or INTx.
func (x MSIXTable) Enabled() bool {
	if x.t == nil {
		return false
	}
	x.t.mu.Lock()
	defer x.t.mu.Unlock()
	return x.t.control()&msixCtlEnable != 0
}

func (t *msixTable) control() uint32 {
	if t.cfg == nil {
		return 0
	}
	v, err := t.cfg.Read(t.cap+2, 2)
	if err != nil {
		return 0
	}
	return v
}

// Signal is vector v's event: its message is sent, or its pending bit
// set while it is masked. A vector beyond the table is dropped.
func (x MSIXTable) Signal(v int) {
	t := x.t
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v < 0 || v >= len(t.dw)/msixEntryDW {
		return
	}
	t.pending |= 1 << v
	t.deliver()
}

// deliver sends the message of every pending vector that may send now
// and clears its pending bit.
func (t *msixTable) deliver() {
	ctl := t.control()
	if ctl&msixCtlEnable == 0 || ctl&msixCtlFnMask != 0 || t.pending == 0 {
		return
	}
	for v := range len(t.dw) / msixEntryDW {
		e := t.dw[v*msixEntryDW:]
		if t.pending&(1<<v) == 0 || e[3]&msixEntryMask != 0 {
			continue
		}
		t.pending &^= 1 << v
		if t.send != nil {
			t.send.Message(uint64(e[1])<<32|uint64(e[0]), e[2])
		}
	}
}

// ConfigWritten is told of a write to the function's config space: a
// Function Mask cleared (or MSI-X enabled) sends what is pending.
func (x MSIXTable) ConfigWritten() {
	if x.t == nil {
		return
	}
	x.t.mu.Lock()
	defer x.t.mu.Unlock()
	x.t.deliver()
}

// Read serves a 4 or 8 byte read at off: the table, or the pending bit
// array; elsewhere reads zero.
func (x MSIXTable) Read(off uint32, size int) uint64 {
	t := x.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if off >= t.pbaOff && off < t.pbaOff+8 {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], t.pending)
		v := binary.LittleEndian.Uint64(b[off-t.pbaOff:])
		if size == 4 {
			v = uint64(uint32(v))
		}
		return v
	}
	dw := t.dw
	i := off / 4
	if i >= uint32(len(dw)) {
		return 0
	}
	v := uint64(dw[i])
	if size == 8 && i+1 < uint32(len(dw)) {
		v |= uint64(dw[i+1]) << 32
	}
	return v
}

// Write serves a 4 or 8 byte write at off; an entry unmasked sends its
// pending message. The pending bits are read-only; what falls outside the
// table is dropped.
func (x MSIXTable) Write(off uint32, size int, v uint64) {
	t := x.t
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range size / 4 {
		if i := off/4 + uint32(k); i < uint32(len(t.dw)) {
			t.dw[i] = uint32(v >> (32 * k))
		}
	}
	t.deliver()
}
