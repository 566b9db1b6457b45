package pci

import (
	"errors"
	"strings"
	"testing"
)

func TestCommandHelpers(t *testing.T) {
	tests := []struct {
		name string
		op   func(Config, Addr) error
		from uint16
		want uint16
	}{
		{"enable memory", EnableMemory, CmdIO, CmdIO | CmdMemory},
		{"disable memory", DisableMemory, CmdIO | CmdMemory, CmdIO},
		{"enable io", EnableIO, 0, CmdIO},
		{"disable io", DisableIO, CmdIO | CmdMemory | CmdBusMaster, CmdMemory | CmdBusMaster},
		{"enable bus master", EnableBusMaster, CmdIO | CmdMemory, CmdIO | CmdMemory | CmdBusMaster},
		{"disable bus master", DisableBusMaster, CmdMemory | CmdBusMaster, CmdMemory},
		{"disable intx", DisableINTx, CmdMemory, CmdMemory | CmdINTxDisable},
		{"enable intx", EnableINTx, CmdMemory | CmdINTxDisable, CmdMemory},
		{"already set", EnableMemory, CmdMemory, CmdMemory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := newFakeBus()
			f := bus.add(fnA, newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal))
			f.put(RegCommand, 2, uint32(tt.from))
			// Error bits set in STATUS must survive: a 32-bit write of
			// COMMAND would clear them.
			f.put(RegStatus, 2, StatusRcvMasterAbort|StatusCapList)
			if err := tt.op(bus, fnA); err != nil {
				t.Fatal(err)
			}
			if got := uint16(f.get(RegCommand, 2)); got != tt.want {
				t.Errorf("COMMAND %#x, want %#x", got, tt.want)
			}
			if got := f.get(RegStatus, 2); got != StatusRcvMasterAbort|StatusCapList {
				t.Errorf("STATUS %#x changed by a COMMAND update", got)
			}
		})
	}
}

func TestSetCommandErrors(t *testing.T) {
	bus := newFakeBus()
	f := bus.add(fnA, newFakeFn(0x8086, 0x10d3, 0x020000, HeaderNormal))
	f.mask(RegCommand, 2, CmdMemory) // bus master hardwired to zero
	if err := EnableBusMaster(bus, fnA); err == nil || !strings.Contains(err.Error(), "after writing") {
		t.Errorf("bus master that does not stick: %v", err)
	}
	if err := EnableMemory(bus, Addr{Bus: 4}); !errors.Is(err, ErrAbsent) {
		t.Errorf("absent function: %v", err)
	}
	old, err := SetCommand(bus, fnA, CmdMemory, 0)
	if err != nil || old != 0 {
		t.Errorf("SetCommand = %#x, %v", old, err)
	}
}
