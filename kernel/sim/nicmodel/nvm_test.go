package nicmodel

import "testing"

func TestNVM(t *testing.T) {
	nvm := make([]uint16, 64)
	nvm[0x0d] = 0x10d3
	PutNVMMAC(nvm, [6]byte{0x52, 0x54, 0x00, 0x12, 0x34, 0x56})
	if nvm[0] != 0x5452 || nvm[1] != 0x1200 || nvm[2] != 0x5634 {
		t.Errorf("MAC words %#04x", nvm[:3])
	}
	SetNVMChecksum(nvm)
	var sum uint16
	for _, w := range nvm[:0x40] {
		sum += w
	}
	if sum != NVMSum {
		t.Errorf("words 0-0x3f sum to %#x", sum)
	}

	word := func(a uint32) uint16 {
		if a < uint32(len(nvm)) {
			return nvm[a]
		}
		return 0xffff
	}
	if v := EerdWrite(0x0d<<EerdAddrSh|EerdStart, word); v != 0x10d3<<EerdDataSh|0x0d<<EerdAddrSh|EerdDone {
		t.Errorf("EERD read of word 0x0d: %#x", v)
	}
	if v := EerdWrite(0x3fff<<EerdAddrSh|EerdStart, word); v>>EerdDataSh != 0xffff || v&EerdDone == 0 {
		t.Errorf("EERD read past the end: %#x", v)
	}
	if v := EerdWrite(5<<EerdAddrSh|EerdDone, word); v != 5<<EerdAddrSh {
		t.Errorf("EERD write without START: %#x, want the address with DONE clear", v)
	}
}
