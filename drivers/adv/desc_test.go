package adv

import (
	"encoding/binary"
	"testing"
)

func TestRxWriteback(t *testing.T) {
	d := make([]byte, Size)
	binary.LittleEndian.PutUint32(d[0:], 0x1234_5671)
	binary.LittleEndian.PutUint32(d[4:], 0xdeadbeef)
	binary.LittleEndian.PutUint32(d[8:], RXD_STAT_DD|RXD_STAT_EOP|RXD_STAT_TCPCS)
	binary.LittleEndian.PutUint16(d[12:], 1514)
	binary.LittleEndian.PutUint16(d[14:], 42)
	w := DecodeRx(d)
	if !RxDone(d) || !w.Done() || !w.EOP() || w.FrameError() || !w.CsumOK() {
		t.Fatalf("status decode %+v", w)
	}
	if w.RSSType != 1 || w.Hash != 0xdeadbeef || w.Length != 1514 || w.VLAN != 42 {
		t.Fatalf("fields %+v", w)
	}
	for _, e := range []uint32{RXDEXT_ERR_CE, RXDEXT_ERR_SE, RXDEXT_ERR_SEQ, RXDEXT_ERR_CXE, RXDEXT_ERR_RXE} {
		binary.LittleEndian.PutUint32(d[8:], RXD_STAT_DD|RXD_STAT_EOP|e)
		if !DecodeRx(d).FrameError() {
			t.Errorf("error bit %#x not a frame error", e)
		}
	}
	binary.LittleEndian.PutUint32(d[8:], RXD_STAT_DD|RXD_STAT_UDPCS|RXDEXT_ERR_L4E)
	if DecodeRx(d).CsumOK() {
		t.Error("checksum reported good with L4E")
	}
	EncodeRxRead(d, 0x1000_0040)
	if RxDone(d) || binary.LittleEndian.Uint64(d) != 0x1000_0040 {
		t.Fatalf("read format %x", d)
	}
}

func TestTx(t *testing.T) {
	d := make([]byte, Size)
	Context{MACLen: 14, IPLen: 20, TUCMD: TXD_TUCMD_IPV4 | TXD_TUCMD_L4T_TCP, L4Len: 32, MSS: 1448}.Encode(d)
	if v := binary.LittleEndian.Uint32(d[0:]); v != 20|14<<9 {
		t.Errorf("VLAN_MACIP_LENS %#x", v)
	}
	if v := binary.LittleEndian.Uint32(d[8:]); v != TXD_TUCMD_IPV4|TXD_TUCMD_L4T_TCP|TXD_DTYP_CTXT|TXD_DCMD_DEXT {
		t.Errorf("TYPE_TUCMD_MLHL %#x", v)
	}
	if v := binary.LittleEndian.Uint32(d[12:]); v != 32<<8|1448<<16 {
		t.Errorf("MSS_L4LEN_IDX %#x", v)
	}
	EncodeData(d, 0xabc000, 1514, TXD_DCMD_IFCS, TXD_POPTS_TXSM, 1514)
	if binary.LittleEndian.Uint64(d) != 0xabc000 {
		t.Error("buffer address")
	}
	if v := binary.LittleEndian.Uint32(d[8:]); v != 1514|TXD_DTYP_DATA|TXD_DCMD_DEXT|TXD_DCMD_IFCS {
		t.Errorf("CMD_TYPE_LEN %#x", v)
	}
	if v := binary.LittleEndian.Uint32(d[12:]); v != TXD_POPTS_TXSM|1514<<TXD_PAYLEN_SHIFT {
		t.Errorf("OLINFO_STATUS %#x", v)
	}
	SetEOP(d)
	if v := binary.LittleEndian.Uint32(d[8:]); v&(TXD_DCMD_EOP|TXD_DCMD_RS) != TXD_DCMD_EOP|TXD_DCMD_RS {
		t.Errorf("EOP/RS not set: %#x", v)
	}
	if TxDone(d) {
		t.Error("done before write-back")
	}
	d[12] |= TXD_STAT_DD
	if !TxDone(d) {
		t.Error("DD not seen")
	}
}
