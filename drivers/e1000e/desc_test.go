package e1000e

import (
	"encoding/binary"
	"testing"
)

func TestRxWritebackDecode(t *testing.T) {
	d := make([]byte, 16)
	encodeRxRead(d, 0x1234_5678_9abc)
	if binary.LittleEndian.Uint64(d) != 0x1234_5678_9abc || rxDone(d) {
		t.Fatal("read format wrong or DD visible")
	}
	binary.LittleEndian.PutUint32(d[8:], RXD_STAT_DD|RXD_STAT_EOP|RXD_STAT_TCPCS|RXD_STAT_IPCS)
	binary.LittleEndian.PutUint16(d[12:], 1514)
	w := decodeRx(d)
	if !rxDone(d) || !w.EOP() || w.length != 1514 || !w.csumOK() || w.FrameError() {
		t.Fatalf("decoded %+v", w)
	}
	binary.LittleEndian.PutUint32(d[8:], RXD_STAT_DD|RXD_STAT_EOP|RXD_STAT_TCPCS|RXDEXT_ERR_TCPE)
	if w := decodeRx(d); w.csumOK() || w.FrameError() {
		t.Errorf("TCP checksum error: csumOK %v frameError %v", w.csumOK(), w.FrameError())
	}
	for _, e := range []uint32{RXDEXT_ERR_CE, RXDEXT_ERR_SE, RXDEXT_ERR_SEQ, RXDEXT_ERR_CXE, RXDEXT_ERR_RXE} {
		binary.LittleEndian.PutUint32(d[8:], RXD_STAT_DD|RXD_STAT_EOP|e)
		if !decodeRx(d).FrameError() {
			t.Errorf("error bit %#x not a frame error", e)
		}
	}
}

func TestTxDescriptorEncoding(t *testing.T) {
	d := make([]byte, 16)
	txContext{ipcss: 14, ipcso: 24, ipcse: 33, tucss: 34, tucso: 50, paylen: 0x12345, hdrlen: 66, mss: 1448, tucmd: TXD_CMD_TSE | TXD_CMD_TCP | TXD_CMD_IP}.encode(d)
	want := []byte{14, 24, 33, 0, 34, 50, 0, 0, 0x45, 0x23, 0x01, 0x20 | 0x04 | 0x01 | 0x02, 0, 66, 0xa8, 0x05}
	for i := range want {
		if d[i] != want[i] {
			t.Fatalf("context byte %d = %#x, want %#x (% x)", i, d[i], want[i], d)
		}
	}
	encodeTxData(d, 0xdead_beef_000, 1500, TXD_CMD_EOP|TXD_CMD_IFCS|TXD_CMD_RS, TXD_POPTS_TXSM)
	if binary.LittleEndian.Uint64(d) != 0xdead_beef_000 {
		t.Error("data address")
	}
	dw2 := binary.LittleEndian.Uint32(d[8:])
	if dw2&0xfffff != 1500 || dw2>>20&0xf != 1 || dw2>>24 != TXD_CMD_EOP|TXD_CMD_IFCS|TXD_CMD_RS|TXD_CMD_DEXT {
		t.Errorf("data dword 2 %#x", dw2)
	}
	if d[13] != TXD_POPTS_TXSM || txDone(d) {
		t.Errorf("popts %#x done %v", d[13], txDone(d))
	}
	d[12] |= TXD_STAT_DD
	if !txDone(d) {
		t.Error("DD not seen")
	}
}
