package mi225

import (
	"encoding/binary"
	"testing"

	"github.com/ether9/ether9/kernel/sim/nicmodel"
	"github.com/ether9/ether9/pci"
)

func eerd(r *rig, word uint32) uint16 {
	r.Regs.Write32(EERD, word<<nicmodel.EerdAddrSh|nicmodel.EerdStart)
	v := r.Regs.Read32(EERD)
	if v&nicmodel.EerdDone == 0 {
		r.T.Fatalf("EERD word %#x: DONE not set (%#x)", word, v)
	}
	return uint16(v >> nicmodel.EerdDataSh)
}

func TestAllPartsIdentifyAndLoadTheirNVM(t *testing.T) {
	if len(Parts) != 16 {
		t.Fatalf("%d parts, want the 16 igc ids", len(Parts))
	}
	seen := map[uint16]bool{}
	for _, p := range Parts {
		t.Run(p.Name, func(t *testing.T) {
			if seen[p.Device] {
				t.Fatalf("device id %#04x listed twice", p.Device)
			}
			seen[p.Device] = true
			r := newRig(t, p.Device)
			id, err := r.M.Bus.ReadConfig(nicAddr, 0, 4)
			if err != nil {
				t.Fatal(err)
			}
			if id != uint32(p.Device)<<16|VendorIntel {
				t.Fatalf("config id %#08x, want %04x:8086", id, p.Device)
			}
			class, _ := r.M.Bus.ReadConfig(nicAddr, 8, 4)
			if class>>8 != ClassEthernet {
				t.Fatalf("class %#06x, want Ethernet", class>>8)
			}
			kind, size, _ := r.nic.Config().BAR(0)
			if kind != pci.BARMem32 || size != mmioSize {
				t.Fatalf("BAR0 %v %#x, want 32-bit memory of 1 MiB", kind, size)
			}
			ral, rah := r.Regs.Read32(nicmodel.RAL0), r.Regs.Read32(nicmodel.RAH0)
			w0, w1, w2 := eerd(r, 0), eerd(r, 1), eerd(r, 2)
			if p.BlankNVM {
				if rah&nicmodel.RahAV != 0 || ral != 0 {
					t.Fatalf("blank NVM: RAL0 %#x RAH0 %#x, want no valid address", ral, rah)
				}
				if w0 != 0xffff || w1 != 0xffff || w2 != 0xffff || eerd(r, nicmodel.NVMChecksumWord) != 0xffff {
					t.Fatalf("blank NVM reads %04x %04x %04x, want all ones", w0, w1, w2)
				}
				if r.Regs.Read32(nicmodel.EECD)&EecdFlashDet != 0 {
					t.Fatal("blank NVM: EECD reports a flash")
				}
				return
			}
			var mac [6]byte
			binary.LittleEndian.PutUint32(mac[0:], ral)
			binary.LittleEndian.PutUint16(mac[4:], uint16(rah))
			if rah&nicmodel.RahAV == 0 || mac != ourMAC {
				t.Fatalf("RAL0/RAH0 give %x (AV %v), want %x", mac, rah&nicmodel.RahAV != 0, ourMAC)
			}
			var nv [6]byte
			binary.LittleEndian.PutUint16(nv[0:], w0)
			binary.LittleEndian.PutUint16(nv[2:], w1)
			binary.LittleEndian.PutUint16(nv[4:], w2)
			if nv != ourMAC {
				t.Fatalf("NVM words 0-2 give %x, want %x", nv, ourMAC)
			}
			var sum uint16
			for w := uint32(0); w <= nicmodel.NVMChecksumWord; w++ {
				sum += eerd(r, w)
			}
			if sum != nicmodel.NVMSum {
				t.Fatalf("NVM checksum sum %#04x, want %#04x", sum, nicmodel.NVMSum)
			}
		})
	}
}

func TestUnknownDeviceIDIsRefused(t *testing.T) {
	for _, dev := range []uint16{0x1533, 0x10d3, 0xffff} {
		if _, err := New(Options{Device: dev}, nopDMA{}, nopIRQ{}); err == nil {
			t.Errorf("device id %#04x accepted", dev)
		}
	}
	if _, err := New(Options{MAC: [6]byte{1}}, nopDMA{}, nopIRQ{}); err == nil {
		t.Error("multicast MAC accepted")
	}
	if _, err := New(Options{}, nil, nopIRQ{}); err == nil {
		t.Error("missing DMA port accepted")
	}
}

type nopDMA struct{}

func (nopDMA) Read(uint64, []byte) error  { return nil }
func (nopDMA) Write(uint64, []byte) error { return nil }

type nopIRQ struct{}

func (nopIRQ) Raise()                 {}
func (nopIRQ) Message(uint64, uint32) {}
func (nopIRQ) SetLevel(bool)          {}
