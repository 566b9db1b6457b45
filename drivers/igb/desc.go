package igb

import "github.com/ether9/ether9/drivers/advdesc"

// The 82576 uses the advanced descriptors (datasheet 7.1.5 and 7.2.2);
// advdesc holds their layout. The names below keep the datasheet's
// 82576 spelling for the bits the rest of the driver names.
const (
	RXD_STAT_DD    = advdesc.RXD_STAT_DD
	RXD_STAT_EOP   = advdesc.RXD_STAT_EOP
	RXD_STAT_L4CS  = advdesc.RXD_STAT_TCPCS // TCP/UDP checksum computed
	RXDADV_ERR_CE  = advdesc.RXDEXT_ERR_CE
	RXDADV_ERR_L4E = advdesc.RXDEXT_ERR_L4E
	RXDADV_ERR_IPE = advdesc.RXDEXT_ERR_IPE

	ADVTXD_DTYP_CTXT     = advdesc.TXD_DTYP_CTXT
	ADVTXD_DTYP_DATA     = advdesc.TXD_DTYP_DATA
	ADVTXD_DCMD_EOP      = advdesc.TXD_DCMD_EOP
	ADVTXD_DCMD_IFCS     = advdesc.TXD_DCMD_IFCS
	ADVTXD_DCMD_RS       = advdesc.TXD_DCMD_RS
	ADVTXD_DCMD_DEXT     = advdesc.TXD_DCMD_DEXT
	ADVTXD_LEN_MASK      = advdesc.TXD_LEN_MASK
	ADVTXD_STAT_DD       = advdesc.TXD_STAT_DD
	ADVTXD_MACLEN_SHIFT  = advdesc.TXD_MACLEN_SHIFT
	ADVTXD_TUCMD_IPV4    = advdesc.TXD_TUCMD_IPV4
	ADVTXD_TUCMD_L4T_TCP = advdesc.TXD_TUCMD_L4T_TCP
)
