package nicstat

// Statistics registers, read to clear. The 8257x, 82576 and I225 keep them
// at the same offsets; a 64-bit counter's high half latches when its low
// half is read.
const (
	CRCERRS  = 0x04000
	ALGNERRC = 0x04004
	SYMERRS  = 0x04008
	RXERRC   = 0x0400c
	MPC      = 0x04010
	SCC      = 0x04014
	ECOL     = 0x04018
	MCC      = 0x0401c
	LATECOL  = 0x04020
	COLC     = 0x04028
	DC       = 0x04030
	TNCRS    = 0x04034
	SEC      = 0x04038
	CEXTERR  = 0x0403c
	RLEC     = 0x04040
	XONRXC   = 0x04048
	XONTXC   = 0x0404c
	XOFFRXC  = 0x04050
	XOFFTXC  = 0x04054
	FCRUC    = 0x04058
	PRC64    = 0x0405c
	PRC127   = 0x04060
	PRC255   = 0x04064
	PRC511   = 0x04068
	PRC1023  = 0x0406c
	PRC1522  = 0x04070
	GPRC     = 0x04074
	BPRC     = 0x04078
	MPRC     = 0x0407c
	GPTC     = 0x04080
	GORCL    = 0x04088
	GORCH    = 0x0408c
	GOTCL    = 0x04090
	GOTCH    = 0x04094
	RNBC     = 0x040a0
	RUC      = 0x040a4
	RFC      = 0x040a8
	ROC      = 0x040ac
	RJC      = 0x040b0
	TORL     = 0x040c0
	TORH     = 0x040c4
	TOTL     = 0x040c8
	TOTH     = 0x040cc
	TPR      = 0x040d0
	TPT      = 0x040d4
	PTC64    = 0x040d8
	PTC127   = 0x040dc
	PTC255   = 0x040e0
	PTC511   = 0x040e4
	PTC1023  = 0x040e8
	PTC1522  = 0x040ec
	MPTC     = 0x040f0
	BPTC     = 0x040f4
	TSCTC    = 0x040f8
	TSCTFC   = 0x040fc
)
