package image

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"io"

	"github.com/ulikunitz/xz/lzma"
)

// The kernel compresses with `xz --check=crc32 --x86 --lzma2`: a filter
// chain of the x86 branch converter and LZMA2, which general-purpose Go xz
// readers refuse. This is a decoder of the .xz container that walks the
// stream through its index, decodes each block's LZMA2 data, undoes the
// branch converter and verifies the block's check.

var (
	xzMagic       = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
	xzFooterMagic = []byte{'Y', 'Z'}
	crc64Table    = crc64.MakeTable(crc64.ECMA)
)

const (
	xzCheckNone   = 0x0
	xzCheckCRC32  = 0x1
	xzCheckCRC64  = 0x4
	xzCheckSHA256 = 0xa

	xzFilterX86   = 0x04
	xzFilterLZMA2 = 0x21
)

var errXZ = errors.New("xz")

func xzErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errXZ, fmt.Sprintf(format, args...))
}

func xzCheckSize(check byte) (int, error) {
	switch check {
	case xzCheckNone:
		return 0, nil
	case xzCheckCRC32:
		return 4, nil
	case xzCheckCRC64:
		return 8, nil
	case xzCheckSHA256:
		return 32, nil
	}
	return 0, xzErr("unsupported check type %#x", check)
}

// uvarint reads the xz multibyte integer at b[*p].
func xzVarint(b []byte, p *int) (uint64, error) {
	var v uint64
	for i := 0; i < 9; i++ {
		if *p >= len(b) {
			return 0, xzErr("truncated integer")
		}
		c := b[*p]
		*p++
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if c == 0 && i > 0 {
				return 0, xzErr("non-minimal integer")
			}
			return v, nil
		}
	}
	return 0, xzErr("integer too long")
}

type xzBlock struct {
	unpadded, uncompressed uint64
}

// unxz decodes one .xz stream that occupies all of src.
func unxz(src []byte) ([]byte, error) {
	if len(src) < 24 || !bytes.Equal(src[:6], xzMagic) {
		return nil, xzErr("no stream header")
	}
	flags := src[6:8]
	if crc32.ChecksumIEEE(flags) != binary.LittleEndian.Uint32(src[8:12]) {
		return nil, xzErr("stream header CRC mismatch")
	}
	if flags[0] != 0 || flags[1]&0xf0 != 0 {
		return nil, xzErr("unsupported stream flags %#x %#x", flags[0], flags[1])
	}
	check := flags[1]
	csize, err := xzCheckSize(check)
	if err != nil {
		return nil, err
	}

	footer := src[len(src)-12:]
	if !bytes.Equal(footer[10:], xzFooterMagic) {
		return nil, xzErr("no stream footer")
	}
	if crc32.ChecksumIEEE(footer[4:10]) != binary.LittleEndian.Uint32(footer[0:4]) {
		return nil, xzErr("stream footer CRC mismatch")
	}
	if !bytes.Equal(footer[8:10], flags) {
		return nil, xzErr("stream header and footer flags differ")
	}
	indexSize := (uint64(binary.LittleEndian.Uint32(footer[4:8])) + 1) * 4
	if indexSize > uint64(len(src)-24) {
		return nil, xzErr("index size %d exceeds the stream", indexSize)
	}
	indexStart := len(src) - 12 - int(indexSize)
	blocks, err := xzIndex(src[indexStart : len(src)-12])
	if err != nil {
		return nil, err
	}

	var out []byte
	p := 12
	for i, blk := range blocks {
		// The index's unpadded size leaves out the padding that aligns
		// the compressed data, which sits before the check.
		end := uint64(p) + (blk.unpadded+3)&^3
		if end > uint64(indexStart) || blk.unpadded < uint64(csize)+8 {
			return nil, xzErr("block %d: size %d does not fit the stream", i, blk.unpadded)
		}
		b := src[p:end]
		data, err := xzDecodeBlock(b[:blk.unpadded-uint64(csize)], b[len(b)-csize:], check, blk.uncompressed)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
		out = append(out, data...)
		p = int(end)
	}
	if p != indexStart {
		return nil, xzErr("%d bytes between the last block and the index", indexStart-p)
	}
	return out, nil
}

func xzIndex(b []byte) ([]xzBlock, error) {
	if len(b) < 8 || b[0] != 0 {
		return nil, xzErr("no index")
	}
	body := b[:len(b)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, xzErr("index CRC mismatch")
	}
	p := 1
	n, err := xzVarint(body, &p)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(body)) {
		return nil, xzErr("index claims %d blocks", n)
	}
	blocks := make([]xzBlock, 0, n)
	for range n {
		var blk xzBlock
		if blk.unpadded, err = xzVarint(body, &p); err != nil {
			return nil, err
		}
		if blk.uncompressed, err = xzVarint(body, &p); err != nil {
			return nil, err
		}
		blocks = append(blocks, blk)
	}
	for ; p < len(body); p++ {
		if body[p] != 0 {
			return nil, xzErr("index padding is not zero")
		}
	}
	return blocks, nil
}

type xzFilter struct {
	id    uint64
	props []byte
}

// xzDecodeBlock decodes one block from b, its header and compressed data,
// and verifies sum, its check.
func xzDecodeBlock(b, sum []byte, check byte, size uint64) ([]byte, error) {
	hlen := (int(b[0]) + 1) * 4
	if b[0] == 0 || hlen > len(b) {
		return nil, xzErr("bad block header size")
	}
	hdr := b[:hlen]
	if crc32.ChecksumIEEE(hdr[:hlen-4]) != binary.LittleEndian.Uint32(hdr[hlen-4:]) {
		return nil, xzErr("block header CRC mismatch")
	}
	bflags := hdr[1]
	if bflags&0x3c != 0 {
		return nil, xzErr("reserved block flags %#x", bflags)
	}
	p := 2
	if bflags&0x40 != 0 { // compressed size: implied by the index
		if _, err := xzVarint(hdr[:hlen-4], &p); err != nil {
			return nil, err
		}
	}
	if bflags&0x80 != 0 {
		v, err := xzVarint(hdr[:hlen-4], &p)
		if err != nil {
			return nil, err
		}
		if v != size {
			return nil, xzErr("block header says %d bytes, index says %d", v, size)
		}
	}
	filters := make([]xzFilter, int(bflags&3)+1)
	for i := range filters {
		id, err := xzVarint(hdr[:hlen-4], &p)
		if err != nil {
			return nil, err
		}
		n, err := xzVarint(hdr[:hlen-4], &p)
		if err != nil {
			return nil, err
		}
		if n > uint64(hlen-4-p) {
			return nil, xzErr("filter properties overrun the block header")
		}
		filters[i] = xzFilter{id: id, props: hdr[p : p+int(n)]}
		p += int(n)
	}

	last := filters[len(filters)-1]
	if last.id != xzFilterLZMA2 || len(last.props) != 1 {
		return nil, xzErr("last filter %#x is not LZMA2", last.id)
	}
	dict, err := lzma2DictSize(last.props[0])
	if err != nil {
		return nil, err
	}
	var x86Start uint32
	for _, f := range filters[:len(filters)-1] {
		switch {
		case f.id == xzFilterX86 && len(f.props) == 0:
		case f.id == xzFilterX86 && len(f.props) == 4:
			x86Start = binary.LittleEndian.Uint32(f.props)
		default:
			return nil, xzErr("unsupported filter %#x", f.id)
		}
	}
	if size > maxKernelSize {
		return nil, xzErr("block of %d bytes is larger than any kernel", size)
	}

	r, err := lzma.Reader2Config{DictCap: dict}.NewReader2(bytes.NewReader(b[hlen:]))
	if err != nil {
		return nil, xzErr("lzma2: %v", err)
	}
	out := make([]byte, size)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, xzErr("lzma2: %v", err)
	}
	if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		return nil, xzErr("lzma2 data longer than the index says")
	}
	if len(filters) == 2 {
		bcjX86Decode(out, x86Start)
	}
	if err := xzVerify(check, out, sum); err != nil {
		return nil, err
	}
	return out, nil
}

func lzma2DictSize(b byte) (int, error) {
	if b > 40 {
		return 0, xzErr("bad LZMA2 dictionary size %#x", b)
	}
	if b == 40 {
		return lzma.MaxDictCap, nil
	}
	d := uint64(2|b&1) << (b/2 + 11)
	return int(min(max(d, lzma.MinDictCap), lzma.MaxDictCap)), nil
}

func xzVerify(check byte, data, want []byte) error {
	var got []byte
	switch check {
	case xzCheckNone:
		return nil
	case xzCheckCRC32:
		got = binary.LittleEndian.AppendUint32(nil, crc32.ChecksumIEEE(data))
	case xzCheckCRC64:
		got = binary.LittleEndian.AppendUint64(nil, crc64.Checksum(data, crc64Table))
	case xzCheckSHA256:
		s := sha256.Sum256(data)
		got = s[:]
	}
	if !bytes.Equal(got, want) {
		return xzErr("check mismatch: data is corrupt")
	}
	return nil
}
