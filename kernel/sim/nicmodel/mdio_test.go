package nicmodel

import "testing"

func TestMDI(t *testing.T) {
	m := MDI(MdicOpRead | 1<<MdicPhySh | PhyID2<<MdicRegSh | MdicIE | 0x1234)
	if m.PHY() != 1 || m.Reg() != PhyID2 || !m.Read() || m.Write() || m.Data() != 0x1234 {
		t.Errorf("decoded %#x: phy %d reg %d read %v write %v", uint32(m), m.PHY(), m.Reg(), m.Read(), m.Write())
	}
	if v := m.Done(0x0cb1, false); v != MdicOpRead|1<<MdicPhySh|PhyID2<<MdicRegSh|MdicIE|MdicReady|0x0cb1 {
		t.Errorf("completed read %#x", v)
	}
	if v := MDI(MdicError|MdicOpWrite).Done(7, true); v&MdicError == 0 || v&MdicReady == 0 || v&MdicDataMask != 7 {
		t.Errorf("failed transaction %#x", v)
	}
	if v := MDI(MdicError|MdicOpWrite).Done(7, false); v&MdicError != 0 {
		t.Errorf("ERROR kept from the write: %#x", v)
	}
	if m := MDI(3 << 26); m.Read() || m.Write() {
		t.Error("opcode 11b taken as an access")
	}
}
