package mi225

// Advanced descriptors are 16 bytes, little endian.
const descLen = 16

// Advanced receive descriptor, read format: packet buffer address
// (bytes 0-7), header buffer address (bytes 8-15).
//
// Write-back format:
//
//	dword 0: RSS type 3:0, packet type 16:4, HDR_LEN 30:21, SPH 31
//	dword 1: RSS hash (RXCSUM.PCSD) or IP identification and checksum
//	dword 2: extended status 19:0, extended errors 31:20
//	dword 3: PKT_LEN 15:0, VLAN tag 31:16
const (
	RxdHdrLenShift = 21
	RxdHdrLenMask  = 0x3ff << RxdHdrLenShift
	RxdSPH         = 1 << 31
	RxdPtypeShift  = 4

	RxdStaDD    = 1 << 0
	RxdStaEOP   = 1 << 1
	RxdStaVP    = 1 << 3
	RxdStaUDPCS = 1 << 4
	RxdStaL4I   = 1 << 5
	RxdStaIPCS  = 1 << 6
	RxdStaPIF   = 1 << 7

	RxdErrHBO = 1 << 23
	RxdErrL4E = 1 << 29
	RxdErrIPE = 1 << 30
	RxdErrRXE = 1 << 31
)

// Legacy receive descriptor: buffer address (bytes 0-7), length (8-9),
// packet checksum (10-11), status (12), errors (13), VLAN tag (14-15).
const (
	RxdLegacyIXSM = 1 << 2
	RxdLegacyTCPE = 1 << 5
	RxdLegacyIPE  = 1 << 6
)

// Packet type bits (in the field at RxdPtypeShift).
const (
	PtypeIPv4  = 1 << 0
	PtypeIPv4E = 1 << 1
	PtypeIPv6  = 1 << 2
	PtypeIPv6E = 1 << 3
	PtypeTCP   = 1 << 4
	PtypeUDP   = 1 << 5
	PtypeSCTP  = 1 << 6
)

// RSS types.
const (
	RSSNone    = 0
	RSSTCPIPv4 = 1
	RSSIPv4    = 2
	RSSTCPIPv6 = 3
	RSSIPv6    = 5
	RSSUDPIPv4 = 7
	RSSUDPIPv6 = 8
)

// Advanced transmit descriptors.
//
// Context: dword 0 VLAN_MACIP_LENS (IPLEN 8:0, MACLEN 15:9, VLAN 31:16),
// dword 1 launch time, dword 2 TYPE_TUCMD_MLHL (DTYP 23:20, DEXT 29,
// TUCMD 19:9), dword 3 MSS_L4LEN_IDX (IDX 4, L4LEN 15:8, MSS 31:16).
//
// Data: bytes 0-7 buffer address, dword 2 CMD_TYPE_LEN (DTALEN 15:0,
// DTYP 23:20, DCMD 31:24), dword 3 OLINFO_STATUS (STA 3:0, IDX 4,
// POPTS 13:8, PAYLEN 31:14). Write-back sets STA.DD in dword 3.
const (
	TxdDTYPShift = 20
	TxdDTYPCtx   = 2
	TxdDTYPData  = 3

	TxdCmdEOP  = 1 << 24
	TxdCmdIFCS = 1 << 25
	TxdCmdIC   = 1 << 26 // legacy: insert checksum
	TxdCmdRS   = 1 << 27
	TxdCmdDEXT = 1 << 29
	TxdCmdVLE  = 1 << 30
	TxdCmdTSE  = 1 << 31
	TxdLenMask = 0xffff

	TxdStaDD       = 1 << 0
	TxdIdx         = 1 << 4
	TxdPoptsIXSM   = 1 << 8
	TxdPoptsTXSM   = 1 << 9
	TxdPaylenShift = 14
	TxdIPLenMask   = 0x1ff
	TxdMACLenShift = 9
	TucmdIPv4      = 1 << 10
	TucmdL4Mask    = 3 << 11
	TucmdL4UDP     = 0 << 11
	TucmdL4TCP     = 1 << 11
	TucmdL4SCTP    = 2 << 11
	TxdL4LenShift  = 8
	TxdMSSShift    = 16
)
