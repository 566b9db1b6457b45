//go:build linux

#include "textflag.h"

// Each routine is exactly one MOV of the named width, so a register access
// is a single bus transaction (no locked read-modify-write as XCHG would
// give, which would read a read-to-clear register as a side effect).

// func load32(addr uintptr) uint32
TEXT ·load32(SB), NOSPLIT, $0-12
	MOVQ addr+0(FP), AX
	MOVL (AX), BX
	MOVL BX, ret+8(FP)
	RET

// func load64(addr uintptr) uint64
TEXT ·load64(SB), NOSPLIT, $0-16
	MOVQ addr+0(FP), AX
	MOVQ (AX), BX
	MOVQ BX, ret+8(FP)
	RET

// func store32(addr uintptr, v uint32)
TEXT ·store32(SB), NOSPLIT, $0-12
	MOVQ addr+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	RET

// func store64(addr uintptr, v uint64)
TEXT ·store64(SB), NOSPLIT, $0-16
	MOVQ addr+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET

// func clflushRange(p unsafe.Pointer, n uintptr)
// Writes back and invalidates every 64-byte line of [addr, addr+n), then
// fences so the lines have reached memory before any following store (the
// register write that tells the device to look).
TEXT ·clflushRange(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), CX
	ADDQ AX, CX
	ANDQ $~63, AX
loop:
	CMPQ AX, CX
	JAE done
	CLFLUSH (AX)
	ADDQ $64, AX
	JMP loop
done:
	MFENCE
	RET
