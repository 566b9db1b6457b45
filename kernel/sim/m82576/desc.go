package m82576

// Receive descriptor write-back, advanced format (datasheet 7.1.5.2):
// DW0 RSS type 3:0, packet type 16:4, header length 30:21, SPH 31;
// DW1 RSS hash, or IP identification 15:0 and packet checksum 31:16
// when RXCSUM.PCSD is clear; DW2 extended status 19:0 and errors 31:20;
// DW3 packet length 15:0 and VLAN tag 31:16.
const (
	RxdDD    = 1 << 0
	RxdEOP   = 1 << 1
	RxdIXSM  = 1 << 2 // legacy only: checksums not checked
	RxdVP    = 1 << 3
	RxdUDPCS = 1 << 4
	RxdL4I   = 1 << 5 // TCPCS in the legacy format
	RxdIPCS  = 1 << 6
	RxdPIF   = 1 << 7

	RxdErrL4E = 1 << 29
	RxdErrIPE = 1 << 30
	RxdErrRXE = 1 << 31

	legacyErrShift = 24 // the errors' byte in a legacy descriptor
)

// Packet type bits of an advanced write-back (DW0 bits 16:4).
const (
	PktIPv4   = 1 << 4
	PktIPv4E  = 1 << 5
	PktIPv6   = 1 << 6
	PktIPv6E  = 1 << 7
	PktTCP    = 1 << 8
	PktUDP    = 1 << 9
	PktSCTP   = 1 << 10
	PktNFS    = 1 << 11
	PktL2     = 1 << 15 // an EtherType filter matched; its index in bits 6:4
	pktETQFSh = 4
)

// RSS types reported in DW0 bits 3:0.
const (
	RSSNone      = 0
	RSSTCPIPv4   = 1
	RSSIPv4      = 2
	RSSTCPIPv6   = 3
	RSSIPv6Ex    = 4
	RSSIPv6      = 5
	RSSTCPIPv6Ex = 6
	RSSUDPIPv4   = 7
	RSSUDPIPv6   = 8
	RSSUDPIPv6Ex = 9
)

// Transmit descriptors (datasheet 7.2.2). The command byte is bits 31:24
// of the second qword's low dword in every format.
const (
	TxdEOP  = 1 << 0
	TxdIFCS = 1 << 1
	TxdIC   = 1 << 2 // legacy: insert checksum
	TxdRS   = 1 << 3
	TxdDEXT = 1 << 5
	TxdVLE  = 1 << 6
	TxdTSE  = 1 << 7

	TxdStaDD = 1 << 0

	DTypContext = 0x2
	DTypData    = 0x3

	// Context descriptor fields.
	CtxMACLenSh = 9
	CtxVLANSh   = 16
	CtxIPLenMsk = 0x1ff
	TucmdIPv4   = 1 << 10
	TucmdL4TSh  = 11
	L4TUDP      = 0
	L4TTCP      = 1
	L4TSCTP     = 2
	CtxIdxSh    = 4
	CtxL4LenSh  = 8
	CtxMSSSh    = 16

	// Data descriptor olinfo_status fields.
	OlinfoIdxSh    = 4
	OlinfoCC       = 1 << 7
	OlinfoIXSM     = 1 << 8
	OlinfoTXSM     = 1 << 9
	OlinfoPayLenSh = 14
)
