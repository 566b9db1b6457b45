package image

import (
	"encoding/binary"
	"math/rand/v2"
)

// codeLike returns n deterministic bytes shaped like x86 code: CALL and JMP
// instructions with 32-bit relative targets among a few functions, which
// the x86 branch converter turns into repeated absolute addresses, mixed
// with filler. testdata/*.xz were made from it with the xz tool:
//
//	go test -run TestWriteCodeLike -args -codelike /tmp/code.bin
//	xz -k --format=xz --check=crc32 --x86 --lzma2=preset=6 /tmp/code.bin             # code.crc32.xz
//	xz -k --format=xz --check=crc64 --x86 --lzma2=preset=6 --block-size=65536 ...   # code.crc64-blocks.xz
//	xz -k --format=xz --check=sha256 --lzma2=preset=6 ...                           # code.sha256-nobcj.xz
func codeLike(n int) []byte {
	rng := rand.New(rand.NewPCG(9, 9))
	targets := []uint32{0x1000, 0x2340, 0x8000, 0x10010, 0x3fff0}
	b := make([]byte, 0, n+8)
	for len(b) < n {
		switch rng.IntN(4) {
		case 0, 1:
			op := byte(0xe8 + rng.IntN(2))
			t := targets[rng.IntN(len(targets))]
			rel := t - uint32(len(b)+5)
			b = append(b, op)
			b = binary.LittleEndian.AppendUint32(b, rel)
		case 2:
			b = append(b, 0x48, 0x89, 0xe5, 0x5d, 0xc3)
		default:
			b = append(b, byte(rng.IntN(256)))
		}
	}
	return b[:n]
}

// elfWithNotes returns a minimal x86-64 ELF file whose one PT_NOTE segment
// holds notes, as the kernel's vmlinux carries its PVH entry note.
func elfWithNotes(notes []byte) []byte {
	const ehsize, phsize = 64, 56
	b := make([]byte, ehsize+phsize)
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 2, 1, 1 // 64-bit, little-endian, version 1
	le := binary.LittleEndian
	le.PutUint16(b[16:], 2)  // ET_EXEC
	le.PutUint16(b[18:], 62) // EM_X86_64
	le.PutUint32(b[20:], 1)  // version
	le.PutUint64(b[32:], 64) // phoff
	le.PutUint16(b[52:], 64) // ehsize
	le.PutUint16(b[54:], 56) // phentsize
	le.PutUint16(b[56:], 1)  // phnum
	ph := b[ehsize:]
	le.PutUint32(ph[0:], 4)                   // PT_NOTE
	le.PutUint64(ph[8:], ehsize+phsize)       // offset
	le.PutUint64(ph[32:], uint64(len(notes))) // filesz
	le.PutUint64(ph[40:], uint64(len(notes))) // memsz
	le.PutUint64(ph[48:], 4)                  // align
	return append(b, notes...)
}

func note(name string, typ uint32, desc []byte) []byte {
	pad := func(b []byte) []byte {
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(name)+1))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
	b = binary.LittleEndian.AppendUint32(b, typ)
	b = append(b, pad(append([]byte(name), 0))...)
	return append(b, pad(desc)...)
}

// pvhELF is a vmlinux stand-in: an ELF with the PVH entry note after an
// unrelated note, followed by code-like bytes.
func pvhELF() []byte {
	notes := append(note("GNU", 3, []byte{1, 2, 3, 4}), note("Xen", 18, []byte{0x00, 0x10, 0x00, 0x01})...)
	return append(elfWithNotes(notes), codeLike(8192)...)
}

// bzImage wraps payload in an x86 boot protocol header as the kernel's
// build does: setup sectors, then the protected-mode code holding the
// payload at payload_offset.
func bzImage(payload []byte) []byte {
	const setupSects = 3
	pm := (setupSects + 1) * 512
	const payloadOff = 0x200
	b := make([]byte, pm+payloadOff, pm+payloadOff+len(payload)+64)
	b[hdrSetupSects] = setupSects
	copy(b[hdrMagic:], "HdrS")
	binary.LittleEndian.PutUint16(b[hdrVersion:], 0x20f)
	binary.LittleEndian.PutUint32(b[hdrPayloadOffset:], payloadOff)
	binary.LittleEndian.PutUint32(b[hdrPayloadLength:], uint32(len(payload)))
	b = append(b, payload...)
	return append(b, make([]byte, 64)...) // the decompressor's tail
}

// withSize appends the uncompressed size as the kernel's build does.
func withSize(stream []byte, size int) []byte {
	return binary.LittleEndian.AppendUint32(append([]byte(nil), stream...), uint32(size))
}
