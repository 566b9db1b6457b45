package igb

import "encoding/binary"

// Advanced descriptors (82576 datasheet 7.1.5 and 7.2.2); all 16 bytes.
const descSize = 16

// Advanced RX write-back: dword 0 holds the RSS and packet types, dword 1
// the RSS hash, dword 2 the extended status (19:0) and errors (31:20),
// dword 3 the length and VLAN tag.
const (
	RXD_STAT_DD    = 1 << 0
	RXD_STAT_EOP   = 1 << 1
	RXD_STAT_VP    = 1 << 3
	RXD_STAT_UDPCS = 1 << 4
	RXD_STAT_L4CS  = 1 << 5 // TCP/UDP checksum computed (TCPCS)
	RXD_STAT_IPCS  = 1 << 6

	RXDADV_ERR_HBO = 1 << 23
	RXDADV_ERR_CE  = 1 << 24
	RXDADV_ERR_SE  = 1 << 25
	RXDADV_ERR_SEQ = 1 << 26
	RXDADV_ERR_CXE = 1 << 28
	RXDADV_ERR_L4E = 1 << 29
	RXDADV_ERR_IPE = 1 << 30
	RXDADV_ERR_RXE = 1 << 31
	rxFrameErrors  = RXDADV_ERR_CE | RXDADV_ERR_SE | RXDADV_ERR_SEQ | RXDADV_ERR_CXE | RXDADV_ERR_RXE
	rxRSSTypeMask  = 0xf
)

// rxWriteback is a decoded advanced RX write-back descriptor.
type rxWriteback struct {
	rssType uint8
	hash    uint32
	staterr uint32
	length  int
	vlan    uint16
}

func decodeRx(d []byte) rxWriteback {
	return rxWriteback{
		rssType: d[0] & rxRSSTypeMask,
		hash:    binary.LittleEndian.Uint32(d[4:]),
		staterr: binary.LittleEndian.Uint32(d[8:]),
		length:  int(binary.LittleEndian.Uint16(d[12:])),
		vlan:    binary.LittleEndian.Uint16(d[14:]),
	}
}

func (w rxWriteback) done() bool       { return w.staterr&RXD_STAT_DD != 0 }
func (w rxWriteback) eop() bool        { return w.staterr&RXD_STAT_EOP != 0 }
func (w rxWriteback) frameError() bool { return w.staterr&rxFrameErrors != 0 }

// csumOK reports a device-verified TCP or UDP checksum.
func (w rxWriteback) csumOK() bool {
	return w.staterr&(RXD_STAT_L4CS|RXD_STAT_UDPCS) != 0 &&
		w.staterr&(RXDADV_ERR_L4E|RXDADV_ERR_IPE) == 0
}

// encodeRxRead writes the one-buffer read format: the packet buffer
// address and a zero header address, which also clears any stale DD.
func encodeRxRead(d []byte, addr uint64) {
	binary.LittleEndian.PutUint64(d[0:], addr)
	binary.LittleEndian.PutUint64(d[8:], 0)
}

// Advanced TX descriptors: cmd_type_len in dword 2, olinfo_status in
// dword 3 for data descriptors.
const (
	ADVTXD_DTYP_CTXT = 0x2 << 20
	ADVTXD_DTYP_DATA = 0x3 << 20
	ADVTXD_DCMD_EOP  = 1 << 24
	ADVTXD_DCMD_IFCS = 1 << 25
	ADVTXD_DCMD_RS   = 1 << 27
	ADVTXD_DCMD_DEXT = 1 << 29
	ADVTXD_DCMD_VLE  = 1 << 30
	ADVTXD_DCMD_TSE  = 1 << 31
	ADVTXD_LEN_MASK  = 0xffff

	ADVTXD_STAT_DD      = 1 << 0
	ADVTXD_POPTS_IXSM   = 1 << 8
	ADVTXD_POPTS_TXSM   = 1 << 9
	ADVTXD_PAYLEN_SHIFT = 14

	// Context descriptor fields.
	ADVTXD_MACLEN_SHIFT  = 9
	ADVTXD_TUCMD_IPV4    = 1 << 10
	ADVTXD_TUCMD_L4T_UDP = 0 << 11
	ADVTXD_TUCMD_L4T_TCP = 1 << 11
	ADVTXD_L4LEN_SHIFT   = 8
	ADVTXD_MSS_SHIFT     = 16

	maxPerTxd = 1<<16 - 1024 // bytes per data descriptor, kept under the 16-bit length
)

// txContext is an advanced context descriptor.
type txContext struct {
	maclen, iplen int
	tucmd         uint32 // ADVTXD_TUCMD_*
	l4len, mss    int
}

func (c txContext) encode(d []byte) {
	binary.LittleEndian.PutUint32(d[0:], uint32(c.iplen)&0x1ff|uint32(c.maclen)<<ADVTXD_MACLEN_SHIFT)
	binary.LittleEndian.PutUint32(d[4:], 0)
	binary.LittleEndian.PutUint32(d[8:], c.tucmd|ADVTXD_DTYP_CTXT|ADVTXD_DCMD_DEXT)
	binary.LittleEndian.PutUint32(d[12:], uint32(c.l4len)<<ADVTXD_L4LEN_SHIFT|uint32(c.mss)<<ADVTXD_MSS_SHIFT)
}

// encodeTxData writes an advanced data descriptor. paylen is the whole
// packet's payload as the datasheet defines it (the frame length, or the
// TCP payload for TSO) and goes on every descriptor of the packet.
func encodeTxData(d []byte, addr uint64, n int, dcmd uint32, popts uint32, paylen int) {
	binary.LittleEndian.PutUint64(d[0:], addr)
	binary.LittleEndian.PutUint32(d[8:], uint32(n)&ADVTXD_LEN_MASK|ADVTXD_DTYP_DATA|ADVTXD_DCMD_DEXT|dcmd)
	binary.LittleEndian.PutUint32(d[12:], popts|uint32(paylen)<<ADVTXD_PAYLEN_SHIFT)
}

// setEOP marks a data descriptor as its packet's last, reporting status.
func setEOP(d []byte) {
	v := binary.LittleEndian.Uint32(d[8:])
	binary.LittleEndian.PutUint32(d[8:], v|ADVTXD_DCMD_EOP|ADVTXD_DCMD_RS)
}

// txDone reads DD in the write-back of a descriptor with RS set.
func txDone(d []byte) bool { return binary.LittleEndian.Uint32(d[12:])&ADVTXD_STAT_DD != 0 }
