/*
 * vdso.S: a vDSO, so the Go runtime reads the clock without a system
 * call (clock_gettime was three in four of all calls without it).
 *
 * The kernel hands a process its vDSO as an ELF image at AT_SYSINFO_EHDR;
 * the Go runtime (runtime/vdso_linux.go) reads only the program headers
 * (a PT_LOAD for the load offset, PT_DYNAMIC), and from the dynamic
 * table DT_STRTAB, DT_SYMTAB, DT_HASH, DT_VERSYM and DT_VERDEF, then looks
 * up __vdso_clock_gettime at version LINUX_2.6 (ELF gABI, "Dynamic
 * Section", "Hash Table"; the LSB for the symbol versioning sections).
 * This image is never copied: the runtime calls it where it lies, in the
 * shim's identity-mapped image, so its code reads the shim's clock
 * variables (time.c) directly.
 */
	.section .rodata.vdso, "a"
	.p2align 12
	.globl vdso_start
vdso_start:
/* Elf64_Ehdr */
	.byte 0x7f, 'E', 'L', 'F', 2, 1, 1, 0
	.quad 0
	.word 3                 /* ET_DYN */
	.word 62                /* EM_X86_64 */
	.long 1
	.quad 0                 /* e_entry */
	.quad phdrs - vdso_start
	.quad 0                 /* e_shoff: no sections */
	.long 0
	.word 64, 56, 2         /* e_ehsize, e_phentsize, e_phnum */
	.word 64, 0, 0
phdrs:
/* Elf64_Phdr PT_LOAD: the whole image, vaddr 0, so addresses are offsets. */
	.long 1, 5
	.quad 0, 0, 0
	.quad vdso_end - vdso_start, vdso_end - vdso_start, 4096
/* PT_DYNAMIC */
	.long 2, 4
	.quad dynamic - vdso_start, dynamic - vdso_start, dynamic - vdso_start
	.quad dynamic_end - dynamic, dynamic_end - dynamic, 8

	.p2align 3
dynamic:
	.quad 4, hash - vdso_start            /* DT_HASH */
	.quad 5, dynstr - vdso_start          /* DT_STRTAB */
	.quad 6, dynsym - vdso_start          /* DT_SYMTAB */
	.quad 10, dynstr_end - dynstr         /* DT_STRSZ */
	.quad 11, 24                          /* DT_SYMENT */
	.quad 0x6ffffff0, versym - vdso_start /* DT_VERSYM */
	.quad 0x6ffffffc, verdef - vdso_start /* DT_VERDEF */
	.quad 0x6ffffffd, 2                   /* DT_VERDEFNUM */
	.quad 0, 0                            /* DT_NULL */
dynamic_end:

/* The symbol hash table: one bucket holding symbol 1, chains ending at 0. */
	.p2align 2
hash:
	.long 1, 2              /* nbucket, nchain */
	.long 1                 /* bucket[0] */
	.long 0, 0              /* chain[0], chain[1] */

/* Elf64_Sym: the null symbol, then __vdso_clock_gettime (global function). */
	.p2align 3
dynsym:
	.long 0
	.byte 0, 0
	.word 0
	.quad 0, 0
	.long str_clock_gettime - dynstr
	.byte 0x12, 0           /* STB_GLOBAL << 4 | STT_FUNC */
	.word 0xfff1            /* SHN_ABS: anything but SHN_UNDEF */
	.quad vdso_clock_gettime - vdso_start
	.quad vdso_clock_gettime_end - vdso_clock_gettime

/* Versions: index 0 local, 1 the base (the file), 2 LINUX_2.6. */
	.p2align 1
versym:
	.word 0, 2

	.p2align 2
verdef:
	/* Elf64_Verdef: version, flags (VER_FLG_BASE), index, aux count, hash, aux, next */
	.word 1, 1, 1, 1
	.long 0x0deebfa1        /* ELF hash of "linux-vdso.so.1" (not checked by Go) */
	.long 20, 28
	.long str_soname - dynstr, 0
	.word 1, 0, 2, 1
	.long 0x3ae75f6         /* ELF hash of "LINUX_2.6" */
	.long 20, 0
	.long str_linux26 - dynstr, 0

dynstr:
	.byte 0
str_clock_gettime: .asciz "__vdso_clock_gettime"
str_soname: .asciz "linux-vdso.so.1"
str_linux26: .asciz "LINUX_2.6"
dynstr_end:

/*
 * int __vdso_clock_gettime(clockid_t clk, struct timespec *ts), System V
 * ABI: clk in EDI, ts in RSI; RAX, RCX, RDX, RSI, RDI and R8-R11 are the
 * caller's to lose. The same arithmetic as now_ns() in time.c:
 * ns = ns_base + (TSC - tsc0) * ns_per_tsc >> 32, plus the wall offset
 * for the real-time clocks, read again if clock_seq moved meanwhile (the
 * shim refined the rate under us). Clocks it does not know go to the
 * system call.
 */
	.p2align 4
vdso_clock_gettime:
	cmpl $11, %edi
	ja 3f
	xorl %r8d, %r8d
	movl $((1 << 0) | (1 << 5) | (1 << 8) | (1 << 11)), %ecx /* REALTIME, _COARSE, _ALARM, TAI */
	btl %edi, %ecx
	jnc 1f
	movq wall_offset(%rip), %r8
1:	movq clock_seq(%rip), %r9
	rdtsc
	shlq $32, %rdx
	orq %rdx, %rax
	subq tsc0(%rip), %rax
	mulq ns_per_tsc(%rip)
	shrdq $32, %rdx, %rax
	addq ns_base(%rip), %rax
	cmpq clock_seq(%rip), %r9
	jne 1b
	addq %r8, %rax
	xorl %edx, %edx
	movl $1000000000, %ecx
	divq %rcx
	movq %rax, (%rsi)
	movq %rdx, 8(%rsi)
	xorl %eax, %eax
	ret
3:	movl $228, %eax         /* clock_gettime */
	syscall
	ret
vdso_clock_gettime_end:
	.p2align 12
vdso_end:
