package nicmodel

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/ether9/ether9/kernel/sim/wire"
)

// CheckNew checks what every model's New is given: a station address
// (def when *mac is zero) that is not a multicast address, a DMA port and
// an interrupt line. family names the model in the error.
func CheckNew(family string, mac *[6]byte, def [6]byte, dma DMA, irq Interrupt) error {
	if *mac == ([6]byte{}) {
		*mac = def
	}
	if mac[0]&1 != 0 {
		return fmt.Errorf("%s: MAC %x is a multicast address", family, *mac)
	}
	if dma == nil || irq == nil {
		return fmt.Errorf("%s: a DMA port and an interrupt line are required", family)
	}
	return nil
}

// LockAll takes a model's locks in its lock order, as given, and returns
// the function that releases them in reverse.
func LockAll(mus ...*sync.Mutex) (unlock func()) {
	for _, mu := range mus {
		mu.Lock()
	}
	return func() {
		for i := len(mus) - 1; i >= 0; i-- {
			mus[i].Unlock()
		}
	}
}

// Snapshot returns a copy of *v taken under mu.
func Snapshot[T any](mu *sync.Mutex, v *T) T {
	mu.Lock()
	defer mu.Unlock()
	return *v
}

// Attach plugs a model into one end of a wire: p becomes its port (stored
// in *port under mu, where the TX engine finds it), and then AttachWire
// hands p the receive path and has the PHY follow the cable.
func Attach(mu *sync.Mutex, port *wire.Port, p wire.Port, receive func(frame []byte), cable func(up bool, mbps int), mbps int) {
	mu.Lock()
	*port = p
	mu.Unlock()
	AttachWire(p, receive, cable, mbps)
}

// ResetRegs clears a register file and sets what every part's datasheet
// gives alike after a software reset: MDIC ready, TCTL with PSP and the
// collision threshold and distance, RXCSUM offloading IP and TCP/UDP
// checksums.
func ResetRegs(r []uint32) {
	clear(r)
	r[MDIC/4] = MdicReady
	r[TCTL/4] = TctlPSP | 0xf<<TctlCTSh | 0x3f<<TctlCOLDSh
	r[RXCSUM/4] = RxcsumIPOFL | RxcsumTUOFL
}

// LoadRAR0 loads receive address 0 (RAL0, RAH0) with the station address
// from the NVM, marked valid.
func LoadRAR0(r []uint32, mac [6]byte) {
	r[RAL0/4] = binary.LittleEndian.Uint32(mac[0:4])
	r[RAH0/4] = uint32(binary.LittleEndian.Uint16(mac[4:6])) | RahAV
}

// WriteEECD is EECD after software writes v on the parts with the
// bit-banged NVM interface (82574, 82576): SK, CS, DI and REQ are
// software's, GNT follows REQ at once, the other bits keep their value.
func WriteEECD(cur, v uint32) uint32 {
	const sw = EecdSK | EecdCS | EecdDI | EecdReq
	v &= sw
	if v&EecdReq != 0 {
		v |= EecdGnt
	}
	return cur&^(sw|EecdGnt) | v
}

// ReadSWSM is a read of SWSM: it returns the register and takes the
// software semaphore (SMBI), which software releases by writing it clear.
func ReadSWSM(r []uint32) uint32 {
	v := r[SWSM/4]
	r[SWSM/4] |= SwsmSMBI
	return v
}

// SpeedCode is the STATUS.SPEED encoding of a link speed: 00b 10 Mb/s,
// 01b 100 Mb/s, 10b 1000 Mb/s and above.
func SpeedCode(mbps int) uint32 {
	switch mbps {
	case 10:
		return 0
	case 100:
		return 1
	}
	return 2
}
