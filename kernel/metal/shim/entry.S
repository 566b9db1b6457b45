/*
 * entry.S: from the PVH entry point (or multiboot.S's) to C, and every
 * way into and out of the shim after that (interrupts, exceptions,
 * SYSCALL).
 */
#define KCODE 0x08
#define KDATA 0x10
#define VEC_SYSCALL 0x100
#define FRAME 176 /* sizeof(struct regs) */

/*
 * The PVH boot protocol (Xen's arch-x86/hvm/start_info.h, which QEMU's
 * pvh.bin implements for -kernel): the loader finds the 32-bit entry
 * point in an ELF note named "Xen" of type XEN_ELFNOTE_PHYS32_ENTRY (18).
 * QEMU reads the descriptor of an ELF64 note as 8 bytes, so it is a quad.
 */
	.section .note.pvh, "a"
	.p2align 2
	.long 4            /* namesz */
	.long 8            /* descsz */
	.long 18           /* XEN_ELFNOTE_PHYS32_ENTRY */
	.asciz "Xen"
	.quad pvh_start

	.section .data
	.p2align 3
boot_proto: .long 0 /* BOOT_PVH or BOOT_MULTIBOOT2 (shim.h) */
boot_info:  .long 0 /* the protocol's information, a physical address */
boot_magic: .long 0 /* EAX at a Multiboot2 entry */

/*
 * The GDT (SDM 3.4.5, 5.2.1): a 64-bit ring-0 code segment (L=1), a data
 * segment, and the TSS descriptor at 0x28 that C fills in (SDM 8.2.3).
 * SYSCALL takes CS from STAR[47:32] and SS from that plus 8 (SDM vol 2B,
 * SYSCALL), so data must follow code.
 */
	.p2align 4
	.globl gdt
gdt:
	.quad 0
	.quad 0x00af9a000000ffff /* 0x08 code: P, DPL 0, L */
	.quad 0x00cf92000000ffff /* 0x10 data */
	.quad 0
	.quad 0
	.quad 0, 0               /* 0x28 TSS, 16 bytes */
gdt_end:
	.globl gdt_ptr
gdt_ptr:
	.word gdt_end - gdt - 1
	.quad gdt

	.section .bss
	.p2align 12
	.globl boot_pml4, boot_pdpt, boot_pd, boot_pt0
boot_pml4: .skip 4096
boot_pdpt: .skip 4096
boot_pd:   .skip 4 * 4096   /* four page directories: 0-4 GiB in 2 MiB pages */
boot_pt0:  .skip 4096       /* the first 2 MiB in 4 KiB pages, so page 0 can go */
	.p2align 4
boot_stack: .skip 16384
boot_stack_top:

/*
 * pvh_start: entered in 32-bit protected mode, paging off, interrupts
 * off, flat CS/DS/ES/SS, no stack, EBX = the start_info's physical address.
 */
	.section .text.entry, "ax"
	.code32
	.globl pvh_start
pvh_start:
	cli
	movl $1, %ebp            /* BOOT_PVH */
	movl %ebx, %esi

/*
 * start32: both protocols' common path, in the machine state they share
 * (above); EBP = the protocol, ESI = its information, EDX = EAX at a
 * Multiboot2 entry. Nothing the firmware or the loader set up is used:
 * the shim brings its own GDT, page tables, control registers and stack.
 */
	.globl start32
start32:
	cld
	/* Zero the BSS: the page tables below assume it. */
	movl $__bss_start, %edi
	movl $__bss_end, %ecx
	subl %edi, %ecx
	shrl $2, %ecx
	xorl %eax, %eax
	rep stosl
	movl %ebp, boot_proto
	movl %esi, boot_info
	movl %edx, boot_magic
	movl $boot_stack_top, %esp

	/*
	 * Identity map 0-4 GiB (SDM 4.5, 4-level paging): PML4[0] -> PDPT,
	 * PDPT[0..3] -> four page directories of 2 MiB pages (PS=1), except
	 * the first 2 MiB, mapped by a page table so that C can unmap the
	 * first 64 KiB later (nil dereferences must fault). Every entry is
	 * present and writable (bits 0 and 1); ring 0 needs no U/S bit.
	 */
	movl $boot_pdpt + 3, boot_pml4
	movl $boot_pd + 3, %eax
	movl $boot_pdpt, %edi
	movl $4, %ecx
1:	movl %eax, (%edi)
	addl $4096, %eax
	addl $8, %edi
	loop 1b

	movl $boot_pd, %edi
	xorl %eax, %eax          /* physical address >> 21, the low half */
	xorl %edx, %edx          /* bits 32+ of the entry */
	movl $2048, %ecx
2:	movl %eax, %ebx
	shll $21, %ebx
	orl $0x83, %ebx          /* P | RW | PS */
	movl %eax, %edx
	shrl $11, %edx           /* bits 32-33 of the address */
	movl %ebx, (%edi)
	movl %edx, 4(%edi)
	incl %eax
	addl $8, %edi
	loop 2b
	movl $boot_pt0 + 3, boot_pd

	movl $boot_pt0, %edi
	movl $3, %eax
	movl $512, %ecx
3:	movl %eax, (%edi)
	addl $4096, %eax
	addl $8, %edi
	loop 3b

	/*
	 * SSE must work before the first Go instruction: CR4.OSFXSR (bit 9)
	 * and OSXMMEXCPT (bit 10), SDM 13.1.3; CR4.PAE (bit 5) for long mode
	 * (SDM 9.8.5). CR4.OSXSAVE and XCR0, for AVX, come later in C
	 * (fpu_init, thread.c), before the first Go instruction.
	 */
	movl $(1 << 5) | (1 << 9) | (1 << 10), %eax /* and nothing a loader left on */
	movl %eax, %cr4
	movl $boot_pml4, %eax
	movl %eax, %cr3

	/* EFER (MSR 0xC0000080): LME (bit 8) for long mode, SCE (bit 0) for SYSCALL. */
	movl $0xc0000080, %ecx
	rdmsr
	orl $(1 << 8) | (1 << 0), %eax
	wrmsr

	/*
	 * CR0: PG (31) turns on IA-32e mode (SDM 9.8.5), MP (1) with EM (2)
	 * clear lets SSE run, NE (5) reports x87 errors natively. The rest
	 * is set outright, not or-ed in: TS (3) left on by a loader would
	 * make the first SSE instruction fault, CD (30) and NW (29) would
	 * leave the caches off.
	 */
	movl $(1 << 31) | (1 << 5) | (1 << 4) | (1 << 1) | (1 << 0), %eax
	movl %eax, %cr0

	lgdt gdt_ptr
	ljmp $KCODE, $long_mode

	.code64
long_mode:
	movl $KDATA, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	xorl %eax, %eax
	movl %eax, %fs
	movl %eax, %gs
	movq $boot_stack_top, %rsp
	movl boot_proto, %edi
	movl boot_info, %esi
	movl boot_magic, %edx
	call boot_main
4:	hlt
	jmp 4b

/* PUSH_GPRS saves the general registers in struct regs's order. */
.macro PUSH_GPRS
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
.endm

/*
 * The interrupt stubs, 16 bytes apart so C can compute their addresses.
 * Every vector gets the same stack layout: the vector, an error code (a
 * zero where the CPU pushes none, SDM 6.13), then the CPU's frame. NMI,
 * #DF and #MC go straight to the fatal path: they can arrive anywhere.
 */
	.text
	.p2align 4
	.globl isr_stubs
isr_stubs:
	.set vec, 0
	.rept 256
	.p2align 4
	.if (vec == 8) || (vec == 10) || (vec == 11) || (vec == 12) || (vec == 13) || (vec == 14) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
	.else
	pushq $0
	.endif
	pushq $vec
	.if (vec == 2) || (vec == 8) || (vec == 18)
	jmp fatal_entry
	.else
	jmp isr_common
	.endif
	.set vec, vec + 1
	.endr

/*
 * Interrupts and exceptions arrive on IST1 (SDM 6.14.5): a ring-0 to
 * ring-0 interrupt does not switch stacks otherwise, and the goroutine
 * stack Go was on may have only a few hundred bytes left below RSP. The
 * IST frame is copied to the top of the current thread's kernel stack,
 * where the registers are saved after it, and the IST is done with: the
 * next interrupt can reuse it, and a thread switch is a matter of which
 * kernel stack the exit pops. A fault while the shim itself runs stays
 * on IST1 and is fatal.
 */
isr_common:
	cmpq $0, %gs:16
	jne fatal_entry
	pushq %rax
	pushq %rsi
	movq %gs:8, %rax
	movq 16(%rsp), %rsi; movq %rsi, -56(%rax)   /* vector */
	movq 24(%rsp), %rsi; movq %rsi, -48(%rax)   /* error code */
	movq 32(%rsp), %rsi; movq %rsi, -40(%rax)   /* rip */
	movq 40(%rsp), %rsi; movq %rsi, -32(%rax)   /* cs */
	movq 48(%rsp), %rsi; movq %rsi, -24(%rax)   /* rflags */
	movq 56(%rsp), %rsi; movq %rsi, -16(%rax)   /* rsp */
	movq 64(%rsp), %rsi; movq %rsi, -8(%rax)    /* ss */
	popq %rsi
	popq %rax
	movq %gs:8, %rsp
	subq $56, %rsp
	jmp save_regs

/*
 * SYSCALL from ring 0 (SDM vol 2B, SYSCALL): RCX = the return RIP, R11 =
 * RFLAGS, RFLAGS masked by FMASK (IF is cleared), no stack switch. Switch
 * to the thread's kernel stack by hand and build the same frame an
 * interrupt would, so one exit (IRETQ) serves both.
 */
	.globl syscall_entry
syscall_entry:
	movq %rsp, %gs:0
	movq %gs:8, %rsp
	pushq $KDATA
	pushq %gs:0
	pushq %r11
	pushq $KCODE
	pushq %rcx
	pushq $0
	pushq $VEC_SYSCALL
save_regs:
	PUSH_GPRS
	movq $1, %gs:16
	movq %rsp, %rdi
	call trap
	/* trap returns the frame to resume: maybe another thread's. */
	.globl resume
resume:
	movq %rax, %rsp
	movq $0, %gs:16
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
	addq $16, %rsp
	iretq

/* enter_frame(frame): start running the thread whose frame this is. */
	.globl enter_frame
enter_frame:
	movq %rdi, %rax
	jmp resume

/* fatal_entry: save the registers where we are and report them. */
fatal_entry:
	PUSH_GPRS
	movq %rsp, %rdi
	andq $~15, %rsp
	call trap_fatal
5:	cli
	hlt
	jmp 5b

/* The idle thread: a shim thread with interrupts on that halts (SDM 2.8, HLT). */
	.globl idle_loop
idle_loop:
	hlt
	jmp idle_loop
