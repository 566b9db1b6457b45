package adv

// The advanced RX and TX descriptors (82576 datasheet 7.1.5 and 7.2.2,
// I225 datasheet 7.1.4 and 7.2.2). Every descriptor is 16 bytes,
// little-endian.

import "encoding/binary"

// Size is the length of one advanced descriptor.
const Size = 16

// RX write-back: dword 0 holds the RSS and packet types, dword 1 the RSS
// hash, dword 2 the extended status (19:0) and errors (31:20), dword 3 the
// packet length and VLAN tag.
const (
	RXD_STAT_DD    = 1 << 0
	RXD_STAT_EOP   = 1 << 1
	RXD_STAT_VP    = 1 << 3
	RXD_STAT_UDPCS = 1 << 4
	RXD_STAT_TCPCS = 1 << 5 // L4 (TCP or UDP) checksum computed
	RXD_STAT_IPCS  = 1 << 6

	RXDEXT_ERR_HBO = 1 << 23
	RXDEXT_ERR_CE  = 1 << 24
	RXDEXT_ERR_SE  = 1 << 25
	RXDEXT_ERR_SEQ = 1 << 26
	RXDEXT_ERR_CXE = 1 << 28
	RXDEXT_ERR_L4E = 1 << 29
	RXDEXT_ERR_IPE = 1 << 30
	RXDEXT_ERR_RXE = 1 << 31

	// FrameErrors are the bits that make a frame unusable.
	FrameErrors = RXDEXT_ERR_CE | RXDEXT_ERR_SE | RXDEXT_ERR_SEQ | RXDEXT_ERR_CXE | RXDEXT_ERR_RXE

	rssTypeMask = 0xf
)

// Rx is a decoded RX write-back descriptor.
type Rx struct {
	RSSType uint8
	Hash    uint32
	StatErr uint32
	Length  int
	VLAN    uint16
}

// DecodeRx reads a write-back descriptor.
func DecodeRx(d []byte) Rx {
	return Rx{
		RSSType: d[0] & rssTypeMask,
		Hash:    binary.LittleEndian.Uint32(d[4:]),
		StatErr: binary.LittleEndian.Uint32(d[8:]),
		Length:  int(binary.LittleEndian.Uint16(d[12:])),
		VLAN:    binary.LittleEndian.Uint16(d[14:]),
	}
}

// RxDone reads only the DD bit: the cheap test before a full decode.
func RxDone(d []byte) bool { return d[8]&RXD_STAT_DD != 0 }

// Done reports that the device wrote the descriptor back.
func (w Rx) Done() bool { return w.StatErr&RXD_STAT_DD != 0 }

// EOP reports the last descriptor of a frame.
func (w Rx) EOP() bool { return w.StatErr&RXD_STAT_EOP != 0 }

// FrameError reports a frame the device flagged as bad.
func (w Rx) FrameError() bool { return w.StatErr&FrameErrors != 0 }

// CsumOK reports a device-verified TCP or UDP checksum.
func (w Rx) CsumOK() bool {
	return w.StatErr&(RXD_STAT_TCPCS|RXD_STAT_UDPCS) != 0 &&
		w.StatErr&(RXDEXT_ERR_L4E|RXDEXT_ERR_IPE) == 0
}

// EncodeRxRead writes the one-buffer read format: the packet buffer
// address and a zero header address, which also clears a stale DD.
func EncodeRxRead(d []byte, addr uint64) {
	binary.LittleEndian.PutUint64(d[0:], addr)
	binary.LittleEndian.PutUint64(d[8:], 0)
}

// TX: cmd_type_len in dword 2; olinfo_status in dword 3 of data
// descriptors, the write-back status there too.
const (
	TXD_DTYP_CTXT = 0x2 << 20
	TXD_DTYP_DATA = 0x3 << 20
	TXD_DCMD_EOP  = 1 << 24
	TXD_DCMD_IFCS = 1 << 25
	TXD_DCMD_RS   = 1 << 27
	TXD_DCMD_DEXT = 1 << 29
	TXD_DCMD_VLE  = 1 << 30
	TXD_DCMD_TSE  = 1 << 31
	TXD_LEN_MASK  = 0xffff

	TXD_STAT_DD      = 1 << 0
	TXD_POPTS_IXSM   = 1 << 8
	TXD_POPTS_TXSM   = 1 << 9
	TXD_PAYLEN_SHIFT = 14

	// Context descriptor fields.
	TXD_MACLEN_SHIFT  = 9
	TXD_TUCMD_IPV4    = 1 << 10
	TXD_TUCMD_L4T_UDP = 0 << 11
	TXD_TUCMD_L4T_TCP = 1 << 11
	TXD_L4LEN_SHIFT   = 8
	TXD_MSS_SHIFT     = 16

	// MaxPerData is the most bytes one data descriptor carries, kept
	// under the 16-bit length field.
	MaxPerData = 1<<16 - 1024
	// MaxIPLen is the largest IP header length a context describes.
	MaxIPLen = 0x1ff
)

// Context is an advanced TX context descriptor.
type Context struct {
	MACLen, IPLen int
	TUCMD         uint32 // TXD_TUCMD_*
	L4Len, MSS    int
}

// Encode writes the context descriptor.
func (c Context) Encode(d []byte) {
	binary.LittleEndian.PutUint32(d[0:], uint32(c.IPLen)&MaxIPLen|uint32(c.MACLen)<<TXD_MACLEN_SHIFT)
	binary.LittleEndian.PutUint32(d[4:], 0)
	binary.LittleEndian.PutUint32(d[8:], c.TUCMD|TXD_DTYP_CTXT|TXD_DCMD_DEXT)
	binary.LittleEndian.PutUint32(d[12:], uint32(c.L4Len)<<TXD_L4LEN_SHIFT|uint32(c.MSS)<<TXD_MSS_SHIFT)
}

// EncodeData writes a data descriptor. paylen is the whole packet's
// payload as the datasheets define it (the frame length, or the TCP
// payload under TSO); it belongs on the packet's first data descriptor.
func EncodeData(d []byte, addr uint64, n int, dcmd, popts uint32, paylen int) {
	binary.LittleEndian.PutUint64(d[0:], addr)
	binary.LittleEndian.PutUint32(d[8:], uint32(n)&TXD_LEN_MASK|TXD_DTYP_DATA|TXD_DCMD_DEXT|dcmd)
	binary.LittleEndian.PutUint32(d[12:], popts|uint32(paylen)<<TXD_PAYLEN_SHIFT)
}

// SetEOP marks a data descriptor as its packet's last, reporting status.
func SetEOP(d []byte) {
	v := binary.LittleEndian.Uint32(d[8:])
	binary.LittleEndian.PutUint32(d[8:], v|TXD_DCMD_EOP|TXD_DCMD_RS)
}

// TxDone reads DD in the write-back of a descriptor sent with RS.
func TxDone(d []byte) bool { return binary.LittleEndian.Uint32(d[12:])&TXD_STAT_DD != 0 }
