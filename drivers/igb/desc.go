package igb

import "github.com/ether9/ether9/drivers/adv"

// The 82576 uses the advanced descriptors (datasheet 7.1.5 and 7.2.2);
// adv holds their layout. The names below keep the datasheet's
// 82576 spelling for the bits the rest of the driver names.
const (
	RXD_STAT_DD    = adv.RXD_STAT_DD
	RXD_STAT_EOP   = adv.RXD_STAT_EOP
	RXD_STAT_L4CS  = adv.RXD_STAT_TCPCS // TCP/UDP checksum computed
	RXDADV_ERR_CE  = adv.RXDEXT_ERR_CE
	RXDADV_ERR_L4E = adv.RXDEXT_ERR_L4E
	RXDADV_ERR_IPE = adv.RXDEXT_ERR_IPE

	ADVTXD_DTYP_CTXT     = adv.TXD_DTYP_CTXT
	ADVTXD_DTYP_DATA     = adv.TXD_DTYP_DATA
	ADVTXD_DCMD_EOP      = adv.TXD_DCMD_EOP
	ADVTXD_DCMD_IFCS     = adv.TXD_DCMD_IFCS
	ADVTXD_DCMD_RS       = adv.TXD_DCMD_RS
	ADVTXD_DCMD_DEXT     = adv.TXD_DCMD_DEXT
	ADVTXD_LEN_MASK      = adv.TXD_LEN_MASK
	ADVTXD_STAT_DD       = adv.TXD_STAT_DD
	ADVTXD_MACLEN_SHIFT  = adv.TXD_MACLEN_SHIFT
	ADVTXD_TUCMD_IPV4    = adv.TXD_TUCMD_IPV4
	ADVTXD_TUCMD_L4T_TCP = adv.TXD_TUCMD_L4T_TCP
)
