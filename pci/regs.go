package pci

// Configuration space registers (PCI Local Bus Specification 3.0, 6.1;
// PCI-to-PCI Bridge Architecture Specification 1.2, 3.2).
const (
	RegVendorID      = 0x00 // 16
	RegDeviceID      = 0x02 // 16
	RegCommand       = 0x04 // 16
	RegStatus        = 0x06 // 16
	RegRevisionID    = 0x08 // 8
	RegClassCode     = 0x09 // 24: prog-if, subclass, base class
	RegCacheLineSize = 0x0c // 8
	RegLatencyTimer  = 0x0d // 8
	RegHeaderType    = 0x0e // 8
	RegBIST          = 0x0f // 8
	RegBAR0          = 0x10 // 32 each, 6 on a type 0 header, 2 on a bridge
	RegSubVendorID   = 0x2c // 16, type 0
	RegSubDeviceID   = 0x2e // 16, type 0
	RegROMAddress    = 0x30 // 32, type 0
	RegCapPtr        = 0x34 // 8, types 0 and 1
	RegInterruptLine = 0x3c // 8
	RegInterruptPin  = 0x3d // 8

	// Type 1 (PCI-to-PCI bridge) and type 2 (CardBus bridge) bus numbers.
	RegPrimaryBus     = 0x18
	RegSecondaryBus   = 0x19
	RegSubordinateBus = 0x1a
	RegCardBusCapPtr  = 0x14 // type 2 capability pointer

	// Extended configuration space (PCI Express) starts here.
	RegExtCapStart = 0x100
)

// Config space sizes.
const (
	ConfigSize    = 256  // conventional, reached by the legacy ports
	ExtConfigSize = 4096 // PCI Express, reached through ECAM
)

// Header types (RegHeaderType bits 6:0) and the multi-function bit.
const (
	HeaderNormal     = 0x00
	HeaderBridge     = 0x01
	HeaderCardBus    = 0x02
	HeaderTypeMask   = 0x7f
	HeaderMultiFunct = 0x80
)

// COMMAND register bits.
const (
	CmdIO          = 1 << 0 // I/O space enable
	CmdMemory      = 1 << 1 // memory space enable
	CmdBusMaster   = 1 << 2
	CmdSpecial     = 1 << 3
	CmdMWI         = 1 << 4 // memory write and invalidate
	CmdVGASnoop    = 1 << 5
	CmdParity      = 1 << 6 // parity error response
	CmdSERR        = 1 << 8
	CmdFastB2B     = 1 << 9
	CmdINTxDisable = 1 << 10
)

// STATUS register bits.
const (
	StatusINTx            = 1 << 3
	StatusCapList         = 1 << 4
	Status66MHz           = 1 << 5
	StatusMasterParityErr = 1 << 8
	StatusSigTargetAbort  = 1 << 11
	StatusRcvTargetAbort  = 1 << 12
	StatusRcvMasterAbort  = 1 << 13
	StatusSigSystemErr    = 1 << 14
	StatusParityErr       = 1 << 15
)

// BAR low bits.
const (
	barIOSpace     = 1 << 0
	barMemType     = 0x6 // bits 2:1
	barMemType32   = 0x0
	barMemType1M   = 0x2 // below 1 MiB, PCI 2.x legacy
	barMemType64   = 0x4
	barPrefetch    = 1 << 3
	barMemAddrMask = ^uint32(0xf)
	barIOAddrMask  = ^uint32(0x3)
)

// Capability ids (PCI Code and ID Assignment Specification).
const (
	CapPM       = 0x01
	CapAGP      = 0x02
	CapVPD      = 0x03
	CapSlotID   = 0x04
	CapMSI      = 0x05
	CapHotSwap  = 0x06
	CapPCIX     = 0x07
	CapHT       = 0x08
	CapVendor   = 0x09
	CapDebug    = 0x0a
	CapSSVID    = 0x0d // bridge subsystem vendor id
	CapPCIe     = 0x10
	CapMSIX     = 0x11
	CapSATA     = 0x12
	CapAF       = 0x13 // advanced features
	CapEnhAlloc = 0x14
)

// Extended capability ids.
const (
	ExtCapAER    = 0x0001
	ExtCapVC     = 0x0002
	ExtCapDSN    = 0x0003 // device serial number
	ExtCapPower  = 0x0004
	ExtCapVendor = 0x000b
	ExtCapACS    = 0x000d
	ExtCapARI    = 0x000e
	ExtCapATS    = 0x000f
	ExtCapSRIOV  = 0x0010
	ExtCapLTR    = 0x0018
	ExtCapSecPCI = 0x0019
	ExtCapL1SS   = 0x001e
	ExtCapPTM    = 0x001f
)
