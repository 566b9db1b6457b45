package e1000e

import "encoding/binary"

// Descriptor sizes and layouts (82574 datasheet, 7.1.5 and 7.2.10).
const descSize = 16

// Extended RX descriptor, write-back format: dword 2 is the extended status
// (bits 19:0) and errors (bits 31:20); dword 3 is length and VLAN tag.
const (
	RXD_STAT_DD    = 1 << 0
	RXD_STAT_EOP   = 1 << 1
	RXD_STAT_VP    = 1 << 3
	RXD_STAT_UDPCS = 1 << 4
	RXD_STAT_TCPCS = 1 << 5
	RXD_STAT_IPCS  = 1 << 6

	RXDEXT_ERR_CE   = 1 << 24 // CRC or alignment error
	RXDEXT_ERR_SE   = 1 << 25 // symbol error
	RXDEXT_ERR_SEQ  = 1 << 26 // sequence error
	RXDEXT_ERR_CXE  = 1 << 28 // carrier extension error
	RXDEXT_ERR_TCPE = 1 << 29 // TCP/UDP checksum error
	RXDEXT_ERR_IPE  = 1 << 30 // IP checksum error
	RXDEXT_ERR_RXE  = 1 << 31 // RX data error

	rxFrameErrors = RXDEXT_ERR_CE | RXDEXT_ERR_SE | RXDEXT_ERR_SEQ | RXDEXT_ERR_CXE | RXDEXT_ERR_RXE
)

// rxWriteback is a decoded RX write-back descriptor.
type rxWriteback struct {
	staterr uint32
	length  int
	vlan    uint16
	hash    uint32
}

func decodeRx(d []byte) rxWriteback {
	return rxWriteback{
		hash:    binary.LittleEndian.Uint32(d[4:]),
		staterr: binary.LittleEndian.Uint32(d[8:]),
		length:  int(binary.LittleEndian.Uint16(d[12:])),
		vlan:    binary.LittleEndian.Uint16(d[14:]),
	}
}

// rxDone reads only the DD bit: the cheap test before a full decode.
func rxDone(d []byte) bool { return d[8]&RXD_STAT_DD != 0 }

func (w rxWriteback) EOP() bool { return w.staterr&RXD_STAT_EOP != 0 }

// FrameError reports errors that make the frame itself bad. Checksum
// errors are not among them: the frame goes up unverified.
func (w rxWriteback) FrameError() bool { return w.staterr&rxFrameErrors != 0 }

// csumOK reports a device-verified L4 checksum.
func (w rxWriteback) csumOK() bool {
	return w.staterr&(RXD_STAT_TCPCS|RXD_STAT_UDPCS) != 0 &&
		w.staterr&(RXDEXT_ERR_TCPE|RXDEXT_ERR_IPE) == 0
}

// encodeRxRead writes the read format: buffer address, and a zero upper
// half so that a stale DD can never be seen.
func encodeRxRead(d []byte, addr uint64) {
	binary.LittleEndian.PutUint64(d[0:], addr)
	binary.LittleEndian.PutUint64(d[8:], 0)
}

// TX descriptor command bits (the byte at bits 31:24 of dword 2), shared by
// the context descriptor's TUCMD and the data descriptor's DCMD.
const (
	TXD_CMD_EOP  = 1 << 0 // data: end of packet
	TXD_CMD_TCP  = 1 << 0 // context: TCP (else UDP)
	TXD_CMD_IFCS = 1 << 1 // data: insert FCS
	TXD_CMD_IP   = 1 << 1 // context: IPv4 (else IPv6)
	TXD_CMD_TSE  = 1 << 2 // TCP segmentation enable
	TXD_CMD_RS   = 1 << 3 // report status
	TXD_CMD_DEXT = 1 << 5 // extended descriptor
	TXD_CMD_IDE  = 1 << 7 // interrupt delay enable

	TXD_DTYP_CTX  = 0 << 20
	TXD_DTYP_DATA = 1 << 20

	TXD_POPTS_IXSM = 1 << 0 // insert IP checksum
	TXD_POPTS_TXSM = 1 << 1 // insert TCP/UDP checksum

	TXD_STAT_DD = 1 << 0

	maxPerTxd = 8192 // bytes per data descriptor
)

// txContext is a TCP/IP context descriptor.
type txContext struct {
	ipcss, ipcso uint8
	ipcse        uint16
	tucss, tucso uint8
	tucse        uint16
	paylen       uint32
	tucmd        uint8
	hdrlen       uint8
	mss          uint16
}

func (c txContext) encode(d []byte) {
	d[0], d[1] = c.ipcss, c.ipcso
	binary.LittleEndian.PutUint16(d[2:], c.ipcse)
	d[4], d[5] = c.tucss, c.tucso
	binary.LittleEndian.PutUint16(d[6:], c.tucse)
	binary.LittleEndian.PutUint32(d[8:], c.paylen&0xfffff|TXD_DTYP_CTX|uint32(c.tucmd|TXD_CMD_DEXT)<<24)
	d[12] = 0
	d[13] = c.hdrlen
	binary.LittleEndian.PutUint16(d[14:], c.mss)
}

// encodeTxData writes an extended data descriptor.
func encodeTxData(d []byte, addr uint64, n int, dcmd, popts uint8) {
	binary.LittleEndian.PutUint64(d[0:], addr)
	binary.LittleEndian.PutUint32(d[8:], uint32(n)&0xfffff|TXD_DTYP_DATA|uint32(dcmd|TXD_CMD_DEXT)<<24)
	d[12] = 0
	d[13] = popts
	binary.LittleEndian.PutUint16(d[14:], 0)
}

func txDone(d []byte) bool { return d[12]&TXD_STAT_DD != 0 }
