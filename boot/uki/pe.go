package uki

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The PE/COFF fields this package reads and writes (Microsoft PE Format
// specification: MS-DOS stub, COFF file header, PE32+ optional header,
// section table).
const (
	dosLfanew = 0x3c // file offset of the PE signature

	coffSize          = 20 // COFF file header, after "PE\0\0"
	coffMachine       = 0
	coffNumSections   = 2
	coffSizeOptHeader = 16

	optMagic          = 0  // 0x20b: PE32+
	optSizeInitData   = 8  // SizeOfInitializedData
	optEntry          = 16 // AddressOfEntryPoint
	optSectionAlign   = 32
	optFileAlign      = 36
	optSizeOfImage    = 56
	optSizeOfHeaders  = 60
	optCheckSum       = 64
	optNumRvaAndSizes = 108
	optDataDirs       = 112
	ddSecurity        = 4 // the certificate table: a file offset, not an RVA

	sectionHeaderSize = 40
	secVirtualSize    = 8
	secVirtualAddress = 12
	secSizeOfRawData  = 16
	secPointerToRaw   = 20
	secCharacteristic = 36

	magicPE32Plus = 0x20b
	machineAMD64  = 0x8664

	// scnData is IMAGE_SCN_CNT_INITIALIZED_DATA | IMAGE_SCN_MEM_READ:
	// what a UKI's payload sections are.
	scnData = 0x00000040 | 0x40000000
)

var le = binary.LittleEndian

// Section is one section of a PE image as its header describes it.
type Section struct {
	Name        string
	VirtualAddr uint32 // RVA where the loader places it
	VirtualSize uint32 // bytes in memory; the payload's length for ours
	RawOffset   uint32 // file offset of its bytes
	RawSize     uint32 // bytes in the file, a multiple of FileAlignment
	Flags       uint32
}

// File is a parsed PE32+ image: the fields section editing needs.
type File struct {
	data         []byte
	Machine      uint16
	Entry        uint32
	SectionAlign uint32
	FileAlign    uint32
	SizeOfImage  uint32
	SizeOfHeader uint32
	Sections     []Section

	coff    int // offset of the COFF file header
	opt     int // offset of the optional header
	optSize int
	secTab  int // offset of the section table
}

// ErrNotPE says the bytes are not a PE32+ image.
var ErrNotPE = errors.New("not a PE32+ image")

// Parse reads a PE32+ image's headers and section table, checking every
// offset against the file so that no input makes it read out of bounds.
func Parse(b []byte) (*File, error) {
	if len(b) < 0x40 || string(b[:2]) != "MZ" {
		return nil, fmt.Errorf("%w: no MZ header", ErrNotPE)
	}
	pe := int64(le.Uint32(b[dosLfanew:]))
	if pe+4+coffSize > int64(len(b)) || string(b[pe:pe+4]) != "PE\x00\x00" {
		return nil, fmt.Errorf("%w: no PE signature at %#x", ErrNotPE, pe)
	}
	coff := int(pe) + 4
	f := &File{data: b, Machine: le.Uint16(b[coff+coffMachine:]), coff: coff}
	f.opt = coff + coffSize
	f.optSize = int(le.Uint16(b[coff+coffSizeOptHeader:]))
	if f.optSize < optDataDirs || f.opt+f.optSize > len(b) {
		return nil, fmt.Errorf("%w: optional header of %d bytes", ErrNotPE, f.optSize)
	}
	opt := b[f.opt : f.opt+f.optSize]
	if m := le.Uint16(opt[optMagic:]); m != magicPE32Plus {
		return nil, fmt.Errorf("%w: optional header magic %#x", ErrNotPE, m)
	}
	if n := le.Uint32(opt[optNumRvaAndSizes:]); uint64(optDataDirs)+8*uint64(n) > uint64(f.optSize) {
		return nil, fmt.Errorf("%w: %d data directories overrun the optional header", ErrNotPE, n)
	}
	f.Entry = le.Uint32(opt[optEntry:])
	f.SectionAlign = le.Uint32(opt[optSectionAlign:])
	f.FileAlign = le.Uint32(opt[optFileAlign:])
	f.SizeOfImage = le.Uint32(opt[optSizeOfImage:])
	f.SizeOfHeader = le.Uint32(opt[optSizeOfHeaders:])
	if !pow2(f.FileAlign) || f.FileAlign < 0x200 || !pow2(f.SectionAlign) || f.SectionAlign < f.FileAlign {
		return nil, fmt.Errorf("%w: alignments file %#x section %#x", ErrNotPE, f.FileAlign, f.SectionAlign)
	}
	f.secTab = f.opt + f.optSize
	n := int(le.Uint16(b[coff+coffNumSections:]))
	if f.secTab+n*sectionHeaderSize > len(b) || f.secTab+n*sectionHeaderSize > int(f.SizeOfHeader) {
		return nil, fmt.Errorf("%w: %d section headers overrun the headers", ErrNotPE, n)
	}
	for i := range n {
		h := b[f.secTab+i*sectionHeaderSize:][:sectionHeaderSize]
		s := Section{
			Name:        cString(h[:8]),
			VirtualSize: le.Uint32(h[secVirtualSize:]),
			VirtualAddr: le.Uint32(h[secVirtualAddress:]),
			RawSize:     le.Uint32(h[secSizeOfRawData:]),
			RawOffset:   le.Uint32(h[secPointerToRaw:]),
			Flags:       le.Uint32(h[secCharacteristic:]),
		}
		if s.RawSize > 0 && uint64(s.RawOffset)+uint64(s.RawSize) > uint64(len(b)) {
			return nil, fmt.Errorf("%w: section %q bytes [%#x, +%#x) lie outside the %d-byte file",
				ErrNotPE, s.Name, s.RawOffset, s.RawSize, len(b))
		}
		f.Sections = append(f.Sections, s)
	}
	return f, nil
}

// Section returns the section named name, or false.
func (f *File) Section(name string) (Section, bool) {
	for _, s := range f.Sections {
		if s.Name == name {
			return s, true
		}
	}
	return Section{}, false
}

// Data returns a section's payload as the loader sees it: VirtualSize
// bytes, those past its raw data reading as zero. A section reaching past
// SizeOfImage, or past maxImage, is an error, as it is to a loader.
func (f *File) Data(s Section) ([]byte, error) {
	end := uint64(s.VirtualAddr) + uint64(s.VirtualSize)
	if end > uint64(f.SizeOfImage) || end > maxImage {
		return nil, fmt.Errorf("pe: section %q [%#x, %#x) beyond SizeOfImage %#x", s.Name, s.VirtualAddr, end, f.SizeOfImage)
	}
	out := make([]byte, s.VirtualSize)
	copy(out, f.data[s.RawOffset:s.RawOffset+min(s.RawSize, s.VirtualSize)])
	return out, nil
}

// maxImage bounds what Data allocates: no EFI image ether9 handles comes
// near it.
const maxImage = 1 << 30

// extent is where a section ends in memory, rounded up to SectionAlign.
func (f *File) extent(s Section) uint64 {
	return alignUp(uint64(s.VirtualAddr)+uint64(max(s.VirtualSize, s.RawSize)), uint64(f.SectionAlign))
}

// AddSection is a section to append: its name (8 bytes at most) and bytes.
type AddSection struct {
	Name string
	Data []byte
}

// Append returns a new image: f with add's sections after its own, each
// at the next free RVA aligned to align (a multiple of SectionAlignment,
// 0 for SectionAlignment itself), its bytes at the end of the file
// aligned to FileAlignment. SizeOfImage, the section count, the size of
// initialized data and the checksum follow; a certificate table is
// dropped, as no signature holds over the changed image. f is unchanged.
func (f *File) Append(align uint32, add ...AddSection) ([]byte, error) {
	if align == 0 {
		align = f.SectionAlign
	}
	if !pow2(align) || align%f.SectionAlign != 0 {
		return nil, fmt.Errorf("pe: alignment %#x is not a power-of-two multiple of SectionAlignment %#x", align, f.SectionAlign)
	}
	n := len(f.Sections)
	hdrEnd := f.secTab + (n+len(add))*sectionHeaderSize
	room := int(f.SizeOfHeader)
	for _, s := range f.Sections {
		if s.RawSize > 0 {
			room = min(room, int(s.RawOffset))
		}
	}
	if hdrEnd > room || hdrEnd > len(f.data) {
		return nil, fmt.Errorf("pe: no room for %d more section headers: %d bytes of header space, %d needed",
			len(add), room, hdrEnd)
	}
	for _, b := range f.data[f.secTab+n*sectionHeaderSize : hdrEnd] {
		if b != 0 {
			return nil, fmt.Errorf("pe: the space after the section table is in use")
		}
	}
	next := alignUp(uint64(f.SizeOfImage), uint64(f.SectionAlign))
	for _, s := range f.Sections {
		next = max(next, f.extent(s))
	}
	fileEnd := alignUp(uint64(len(f.data)), uint64(f.FileAlign))
	total := fileEnd
	for _, a := range add {
		total += alignUp(uint64(len(a.Data)), uint64(f.FileAlign))
	}
	if total > 1<<32-1 {
		return nil, fmt.Errorf("pe: the image would be %d bytes, over 4 GiB", total)
	}
	out := make([]byte, total)
	copy(out, f.data)
	opt := out[f.opt : f.opt+f.optSize]
	initData := uint64(le.Uint32(opt[optSizeInitData:]))
	raw := fileEnd
	for i, a := range add {
		if len(a.Name) == 0 || len(a.Name) > 8 {
			return nil, fmt.Errorf("pe: section name %q: want 1 to 8 bytes", a.Name)
		}
		if _, dup := f.Section(a.Name); dup {
			return nil, fmt.Errorf("pe: the image has a %s section already", a.Name)
		}
		va := alignUp(next, uint64(align))
		size := uint64(len(a.Data))
		rawSize := alignUp(size, uint64(f.FileAlign))
		if va+size > 1<<32-1 {
			return nil, fmt.Errorf("pe: section %s at RVA %#x: the image would pass 4 GiB", a.Name, va)
		}
		h := out[f.secTab+(n+i)*sectionHeaderSize:][:sectionHeaderSize]
		copy(h[:8], a.Name)
		le.PutUint32(h[secVirtualSize:], uint32(size))
		le.PutUint32(h[secVirtualAddress:], uint32(va))
		le.PutUint32(h[secSizeOfRawData:], uint32(rawSize))
		le.PutUint32(h[secPointerToRaw:], uint32(raw))
		le.PutUint32(h[secCharacteristic:], scnData)
		copy(out[raw:], a.Data)
		raw += rawSize
		initData += rawSize
		next = alignUp(va+max(size, 1), uint64(f.SectionAlign))
	}
	le.PutUint16(out[f.coff+coffNumSections:], uint16(n+len(add)))
	le.PutUint32(opt[optSizeOfImage:], uint32(next))
	le.PutUint32(opt[optSizeInitData:], uint32(min(initData, 1<<32-1)))
	if nd := le.Uint32(opt[optNumRvaAndSizes:]); nd > ddSecurity {
		clear(opt[optDataDirs+8*ddSecurity:][:8])
	}
	le.PutUint32(opt[optCheckSum:], 0)
	le.PutUint32(opt[optCheckSum:], Checksum(out, f.opt+optCheckSum))
	return out, nil
}

// Checksum is the PE image checksum: the 16-bit one's-complement sum of
// the file's little-endian words, the CheckSum field (at off) taken as
// zero, plus the file's length.
func Checksum(b []byte, off int) uint32 {
	var sum uint64
	for i := 0; i < len(b); i += 2 {
		var w uint64
		if i >= off && i < off+4 {
			w = 0
		} else if i+1 < len(b) {
			w = uint64(le.Uint16(b[i:]))
		} else {
			w = uint64(b[i])
		}
		sum += w
		sum = (sum & 0xffff) + sum>>16
	}
	sum = (sum & 0xffff) + sum>>16
	return uint32(sum) + uint32(len(b))
}

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func pow2(x uint32) bool { return x != 0 && x&(x-1) == 0 }

func alignUp(x, a uint64) uint64 { return (x + a - 1) &^ (a - 1) }
