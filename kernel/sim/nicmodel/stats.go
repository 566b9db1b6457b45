package nicmodel

// The statistics registers of the Intel gigabit family: the same offsets
// on the 82574, the 82576 and the I225. All clear on read; each part has
// a few more of its own.
const (
	CRCERRS  = 0x04000
	ALGNERRC = 0x04004
	RXERRC   = 0x0400c
	MPC      = 0x04010
	SCC      = 0x04014
	ECOL     = 0x04018
	MCC      = 0x0401c
	LATECOL  = 0x04020
	COLC     = 0x04028
	DC       = 0x04030
	TNCRS    = 0x04034
	RLEC     = 0x04040
	XONRXC   = 0x04048
	XONTXC   = 0x0404c
	XOFFRXC  = 0x04050
	XOFFTXC  = 0x04054
	FCRUC    = 0x04058
	PRC64    = 0x0405c // PRC64 to PRC1522: the six SizeBin bins, 4 bytes apart
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
	MGTPRC   = 0x040b4
	MGTPDC   = 0x040b8
	MGTPTC   = 0x040bc
	TORL     = 0x040c0
	TORH     = 0x040c4
	TOTL     = 0x040c8
	TOTH     = 0x040cc
	TPR      = 0x040d0
	TPT      = 0x040d4
	PTC64    = 0x040d8 // PTC64 to PTC1522: as PRC64
	PTC127   = 0x040dc
	PTC255   = 0x040e0
	PTC511   = 0x040e4
	PTC1023  = 0x040e8
	PTC1522  = 0x040ec
	MPTC     = 0x040f0
	BPTC     = 0x040f4
	TSCTC    = 0x040f8
	TSCTFC   = 0x040fc // not on the I225
	IAC      = 0x04100
)

// CountRx adds a frame written to a receive ring to the good-frame
// statistics in register file r: GPRC, GORC, BPRC or MPRC, and its size
// bin from PRC64 on. The frame is as it came off the wire, without FCS.
func CountRx(r []uint32, frame []byte) {
	l := len(frame) + FCSLen
	AddStat(r, GPRC, 1)
	AddStat64(r, GORCL, uint64(l))
	switch {
	case IsBroadcast(frame):
		AddStat(r, BPRC, 1)
	case frame[0]&1 != 0:
		AddStat(r, MPRC, 1)
	}
	if l <= 1522 {
		AddStat(r, PRC64+4*uint32(SizeBin(l)), 1)
	}
}

// ReadStat reads the statistic at off of register file r (indexed by
// offset/4) and clears it, as the hardware does on a read. A 64-bit
// counter is read low half first: reading the low half leaves it, reading
// the high half clears both.
func ReadStat(r []uint32, off uint32) uint32 {
	v := r[off/4]
	switch off {
	case GORCL, GOTCL, TORL, TOTL:
	case GORCH, GOTCH, TORH, TOTH:
		r[off/4], r[off/4-1] = 0, 0
	default:
		r[off/4] = 0
	}
	return v
}

// AddStat adds d to the 32-bit statistic at off; the counter sticks at its
// maximum rather than wrap.
func AddStat(r []uint32, off uint32, d uint64) {
	v := uint64(r[off/4]) + d
	r[off/4] = uint32(min(v, 0xffffffff))
}

// AddStat64 adds d to the 64-bit statistic whose low half is at lo.
func AddStat64(r []uint32, lo uint32, d uint64) {
	v := uint64(r[lo/4]) | uint64(r[lo/4+1])<<32
	v += d
	r[lo/4], r[lo/4+1] = uint32(v), uint32(v>>32)
}
