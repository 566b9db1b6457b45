/*
 * metal.c: the calls only this shim has, for the Go side of the metal
 * platform (kernel/metal): what Linux would offer through /dev/mem,
 * /proc/self/pagemap, hugepages and /sys/firmware/acpi. Their numbers,
 * from 0x4d00, are far above Linux's, so on Linux the same calls fail
 * with ENOSYS and kernel/metal knows it is not on the shim.
 */
#include "shim.h"

#define METAL_IDENT 0x4d00     /* () -> METAL_MAGIC */
#define METAL_DMA_ALLOC 0x4d01 /* (size, align) -> physical address */
#define METAL_DMA_FREE 0x4d02  /* (physical address, size) -> 0 */
#define METAL_PHYS 0x4d03      /* (virtual address) -> physical address */
#define METAL_RSDP 0x4d04      /* () -> the ACPI RSDP's physical address */
#define METAL_IRQ_ALLOC 0x4d05 /* (u32 *word, eventfd) -> LAPIC ID << 32 | vector */
#define METAL_IRQ_FREE 0x4d06  /* (vector) -> 0 */
#define METAL_STATS 0x4d07     /* (struct stats *, size) -> bytes copied */
#define METAL_MEMMAP 0x4d08    /* (struct boot_mem *, max entries) -> entries */
#define METAL_CONSOLE_LINE 0x4d09  /* () -> the console's I/O APIC line (ioapic.c) */
#define METAL_CONSOLE_REMAP 0x4d0a /* (remapping entry) -> 0 */
#define METAL_LAPIC 0x4d0b         /* () -> x2APIC mode << 32 | APIC id */
#define METAL_MAGIC 0x6c6174656dUL /* "metal" */

/* The DMA allocations, so that a free must name one exactly. */
static struct { u64 pa, size; } dma[256];

static i64 dma_alloc(u64 size, u64 align)
{
	if (!size || size > (1UL << 30) || (align & (align - 1)) || align > (1UL << 30))
		return -EINVAL;
	size = (size + PAGE - 1) & ~(PAGE - 1);
	for (int i = 0; i < 256; i++) {
		if (dma[i].size)
			continue;
		u64 pa = contig_alloc(size, align);
		if (!pa)
			return -ENOMEM;
		dma[i].pa = pa;
		dma[i].size = size;
		return (i64)pa;
	}
	return -ENOMEM;
}

static i64 dma_free(u64 pa, u64 size)
{
	size = (size + PAGE - 1) & ~(PAGE - 1);
	for (int i = 0; i < 256; i++) {
		if (dma[i].pa != pa || dma[i].size != size || !size)
			continue;
		for (u64 p = pa; p < pa + size; p += PAGE)
			page_free(p);
		dma[i].pa = dma[i].size = 0;
		return 0;
	}
	return -EINVAL;
}

/*
 * Device interrupts (MSI or MSI-X, edge-triggered messages to this
 * LAPIC) reach Go as an eventfd: each interrupt on a vector adds one to
 * the eventfd registered with it, which wakes the Go netpoller, and one
 * to a count word Go reads for its statistics. A poll loop sleeps in the
 * netpoller, not in a blocking call: with one P, a thread blocked in a
 * system call holds the P until sysmon takes it back, up to 10 ms on a
 * quiet machine, and every other goroutine waits that long.
 */
#define VEC_DEV_FIRST 0x50
#define VEC_DEV_END 0xf0
static u64 irq_word[VEC_DEV_END];
static int irq_efd[VEC_DEV_END];

static i64 irq_alloc(u64 word, u64 efd)
{
	if ((word & 3) || user_ok(word, 4, 1))
		return -EFAULT;
	if (!fs_is_eventfd((i64)efd))
		return -EBADF;
	for (int v = VEC_DEV_FIRST; v < VEC_DEV_END; v++) {
		if (!irq_word[v]) {
			irq_word[v] = word;
			irq_efd[v] = (int)efd;
			return (i64)((u64)lapic_id() << 32 | (u64)v);
		}
	}
	return -ENOSPC;
}

int irq_device(u64 v)
{
	if (v < VEC_DEV_FIRST || v >= VEC_DEV_END || !irq_word[v])
		return 0;
	stats.device_irqs++;
	if (!user_ok(irq_word[v], 4, 1))
		__atomic_add_fetch((u32 *)irq_word[v], 1, __ATOMIC_SEQ_CST);
	if (irq_efd[v] >= 0) {
		eventfd_signal(irq_efd[v]);
		need_resched(); /* the netpoller runs now, not at the end of a slice */
	}
	return 1;
}

/* irq_fd_closed: the Go side closed fd; a vector that signalled it
 * stops, rather than signal whatever file gets the number next. */
void irq_fd_closed(int fd)
{
	for (int v = VEC_DEV_FIRST; v < VEC_DEV_END; v++)
		if (irq_word[v] && irq_efd[v] == fd)
			irq_efd[v] = -1;
}

i64 metal_call(u64 nr, u64 a0, u64 a1)
{
	switch (nr) {
	case METAL_IDENT: return (i64)METAL_MAGIC;
	case METAL_DMA_ALLOC: return dma_alloc(a0, a1);
	case METAL_DMA_FREE: return dma_free(a0, a1);
	case METAL_PHYS: {
		u64 pa = mm_phys(a0);
		return pa ? (i64)pa : -EFAULT;
	}
	case METAL_RSDP: return acpi_rsdp() ? (i64)acpi_rsdp() : -ENOENT;
	case METAL_IRQ_ALLOC: return irq_alloc(a0, a1);
	case METAL_STATS: { /* the counters as they stand */
		if (a1 > sizeof stats)
			a1 = sizeof stats;
		if (user_ok(a0, a1, 1))
			return -EFAULT;
		memcpy((void *)a0, &stats, a1);
		return (i64)a1;
	}
	case METAL_MEMMAP: { /* the loader's memory map, for the PCI hole */
		u32 n;
		const struct boot_mem *m = boot_memmap(&n);
		if (a1 < n)
			n = (u32)a1;
		if (user_ok(a0, n * sizeof *m, 1))
			return -EFAULT;
		memcpy((void *)a0, m, n * sizeof *m);
		return n;
	}
	case METAL_CONSOLE_LINE: return ioapic_console_line();
	case METAL_CONSOLE_REMAP: return ioapic_console_remap(a0);
	case METAL_LAPIC: return (i64)((u64)lapic_x2apic() << 32 | lapic_id());
	case METAL_IRQ_FREE:
		if (a0 < VEC_DEV_FIRST || a0 >= VEC_DEV_END || !irq_word[a0])
			return -EINVAL;
		irq_word[a0] = 0;
		irq_efd[a0] = -1;
		return 0;
	}
	return -ENOSYS;
}

void irq_dump(void)
{
	for (int v = VEC_DEV_FIRST; v < VEC_DEV_END; v++)
		if (irq_word[v])
			kprintf("metal:   vector %d word %lx count %u eventfd %d\n", v, irq_word[v],
				user_ok(irq_word[v], 4, 0) ? 0 : *(volatile u32 *)irq_word[v], irq_efd[v]);
}
