/*
 * multiboot.S: the Multiboot2 header and entry (the Multiboot2
 * Specification, version 2.0; "MB2 x.y"), beside entry.S's PVH note, so
 * that GRUB's multiboot2 command boots the same shim.elf that QEMU's
 * -kernel does. GRUB loads the ELF's PT_LOAD segments at their physical
 * addresses, as QEMU does, and jumps to the entry address tag's address.
 */
#define MB2_MAGIC 0xe85250d6
#define MB2_ARCH_I386 0 /* 32-bit protected mode (MB2 3.1.2) */

/*
 * The header (MB2 3.1.1): within the file's first 32 KiB, 8-byte aligned
 * (shim.ld puts it first); magic, architecture, length and a checksum
 * that makes the four sum to zero, then tags, each 8-byte aligned.
 */
	.section .multiboot2, "a"
	.p2align 3
mb2_header:
	.long MB2_MAGIC
	.long MB2_ARCH_I386
	.long mb2_header_end - mb2_header
	.long 0x100000000 - (MB2_MAGIC + MB2_ARCH_I386 + (mb2_header_end - mb2_header))
	/* The entry address tag (MB2 3.1.6): type 3, flags 0, size 12. The
	 * ELF's own entry is pvh_start, which expects PVH's registers. */
	.p2align 3
	.short 3, 0
	.long 12
	.long multiboot2_start
	/* The end tag: type 0, size 8. */
	.p2align 3
	.short 0, 0
	.long 8
mb2_header_end:

/*
 * multiboot2_start: the I386 machine state (MB2 3.3): 32-bit protected
 * mode, paging off, interrupts off, flat segments, no stack, EAX = the
 * boot magic, EBX = the boot information's physical address. That is
 * PVH's state with other registers: hand them to entry.S's common path,
 * which C (multiboot.c) checks the magic after.
 */
	.section .text.entry, "ax"
	.code32
	.globl multiboot2_start
multiboot2_start:
	cli
	movl %eax, %edx
	movl %ebx, %esi
	movl $2, %ebp            /* BOOT_MULTIBOOT2 */
	jmp start32
