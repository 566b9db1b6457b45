package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// The classic libpcap file format: a 24-byte file header, then per packet
// a 16-byte record header and the captured bytes. This writer uses the
// nanosecond-resolution magic and link type 1 (Ethernet).
const (
	pcapMagicMicro = 0xa1b2c3d4
	pcapMagicNano  = 0xa1b23c4d
	pcapVersionMaj = 2
	pcapVersionMin = 4
	// LinkTypeEthernet is the pcap link type of IEEE 802.3 frames.
	LinkTypeEthernet = 1
	// Snaplen is the largest frame the writer records whole.
	Snaplen = 262144

	pcapFileHeaderLen   = 24
	pcapRecordHeaderLen = 16
)

// PcapWriter writes a pcap capture.
type PcapWriter struct {
	w   io.Writer
	hdr [pcapRecordHeaderLen]byte
}

// NewPcapWriter writes the file header to w.
func NewPcapWriter(w io.Writer) (*PcapWriter, error) {
	var h [pcapFileHeaderLen]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], pcapMagicNano)
	le.PutUint16(h[4:], pcapVersionMaj)
	le.PutUint16(h[6:], pcapVersionMin)
	// thiszone and sigfigs stay zero.
	le.PutUint32(h[16:], Snaplen)
	le.PutUint32(h[20:], LinkTypeEthernet)
	if _, err := w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("pcap file header: %w", err)
	}
	return &PcapWriter{w: w}, nil
}

// WritePacket records one frame seen at time t (since the capture's epoch).
func (p *PcapWriter) WritePacket(t time.Duration, frame []byte) error {
	if t < 0 {
		t = 0
	}
	capLen := min(len(frame), Snaplen)
	le := binary.LittleEndian
	le.PutUint32(p.hdr[0:], uint32(t/time.Second))
	le.PutUint32(p.hdr[4:], uint32(t%time.Second))
	le.PutUint32(p.hdr[8:], uint32(capLen))
	le.PutUint32(p.hdr[12:], uint32(len(frame)))
	if _, err := p.w.Write(p.hdr[:]); err != nil {
		return fmt.Errorf("pcap record header: %w", err)
	}
	if _, err := p.w.Write(frame[:capLen]); err != nil {
		return fmt.Errorf("pcap record data: %w", err)
	}
	return nil
}

// Packet is one captured frame.
type Packet struct {
	Time    time.Duration
	Data    []byte
	OrigLen int
}

// ErrPcapFormat reports a file that is not a pcap capture this package reads.
var ErrPcapFormat = errors.New("not a pcap capture")

// ReadPcap parses a whole capture written by this package or by any tool
// producing classic pcap (either byte order, micro- or nanosecond stamps).
func ReadPcap(r io.Reader) (linkType uint32, pkts []Packet, err error) {
	var h [pcapFileHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, fmt.Errorf("pcap file header: %w", err)
	}
	var bo binary.ByteOrder
	var unit time.Duration
	switch {
	case binary.LittleEndian.Uint32(h[0:]) == pcapMagicNano:
		bo, unit = binary.LittleEndian, time.Nanosecond
	case binary.LittleEndian.Uint32(h[0:]) == pcapMagicMicro:
		bo, unit = binary.LittleEndian, time.Microsecond
	case binary.BigEndian.Uint32(h[0:]) == pcapMagicNano:
		bo, unit = binary.BigEndian, time.Nanosecond
	case binary.BigEndian.Uint32(h[0:]) == pcapMagicMicro:
		bo, unit = binary.BigEndian, time.Microsecond
	default:
		return 0, nil, fmt.Errorf("magic %#x: %w", binary.LittleEndian.Uint32(h[0:]), ErrPcapFormat)
	}
	if maj := bo.Uint16(h[4:]); maj != pcapVersionMaj {
		return 0, nil, fmt.Errorf("version %d: %w", maj, ErrPcapFormat)
	}
	snaplen := bo.Uint32(h[16:])
	linkType = bo.Uint32(h[20:])
	for n := 0; ; n++ {
		var rh [pcapRecordHeaderLen]byte
		if _, err := io.ReadFull(r, rh[:]); err != nil {
			if err == io.EOF {
				return linkType, pkts, nil
			}
			return linkType, pkts, fmt.Errorf("pcap record %d header: %w", n, err)
		}
		capLen, origLen := bo.Uint32(rh[8:]), bo.Uint32(rh[12:])
		if capLen > snaplen || capLen > origLen {
			return linkType, pkts, fmt.Errorf("pcap record %d: captured %d of %d bytes, snaplen %d: %w",
				n, capLen, origLen, snaplen, ErrPcapFormat)
		}
		data := make([]byte, capLen)
		if _, err := io.ReadFull(r, data); err != nil {
			return linkType, pkts, fmt.Errorf("pcap record %d data: %w", n, err)
		}
		t := time.Duration(bo.Uint32(rh[0:]))*time.Second + time.Duration(bo.Uint32(rh[4:]))*unit
		pkts = append(pkts, Packet{Time: t, Data: data, OrigLen: int(origLen)})
	}
}
