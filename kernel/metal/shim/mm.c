/*
 * mm.c: physical pages, the page tables, and the Go process's mappings.
 *
 * Physical memory is identity mapped from 64 KiB to ident_top (at least
 * 4 GiB, so MMIO, ECAM and the LAPIC are reachable at their physical
 * addresses, and a DMA address is the pointer the Go code holds). The
 * Go binary runs at its link address inside that map, its file-backed
 * pages pointed at the module where the loader left it and its zero tail
 * filled on first touch (mm_map_image, mm_zero_lazily). Everything
 * Go asks for with mmap lives above ident_top and is demand paged: a VMA
 * records what was asked for, and the first touch of a page maps a
 * zeroed physical page (so reserving 512 MiB costs nothing, as on Linux).
 */
#include "shim.h"

extern u64 boot_pml4[512], boot_pt0[512];

#define PTE_P 1UL
#define PTE_W 2UL
#define PTE_PS (1UL << 7)
#define PTE_ADDR 0x000ffffffffff000UL
#define USER_TOP 0x0000800000000000UL  /* end of the lower canonical half */
#define MMAP_BASE 0x0000600000000000UL /* where mmap places what has no hint */
#define STACK_TOP 0x00007ffe00000000UL

u64 ident_top;

/* Free physical memory: ranges not yet handed out, and a list of pages
 * given back (linked through their first word). */
static struct { u64 start, end; } ram[32];
static int nram;
static u64 free_list, free_count;

void mm_add_ram(u64 start, u64 end)
{
	start = (start + PAGE - 1) & ~(PAGE - 1);
	end &= ~(PAGE - 1);
	if (start < (1UL << 20))
		start = 1UL << 20; /* leave the first MiB to firmware and boot data */
	if (end <= start || nram == 32)
		return;
	ram[nram].start = start;
	ram[nram].end = end;
	nram++;
}

/* mm_reserve removes [start, end) from the free ranges, splitting one
 * when the hole is in its middle. */
void mm_reserve(u64 start, u64 end)
{
	start &= ~(PAGE - 1);
	end = (end + PAGE - 1) & ~(PAGE - 1);
	for (int i = 0; i < nram; i++) {
		u64 s = ram[i].start, e = ram[i].end;
		if (end <= s || start >= e)
			continue;
		if (start > s && end < e) {
			if (nram == 32)
				panic("too many memory holes");
			ram[nram].start = end;
			ram[nram].end = e;
			nram++;
			ram[i].end = start;
		} else if (start <= s && end >= e) {
			ram[i].start = ram[i].end = 0;
		} else if (start <= s) {
			ram[i].start = end;
		} else {
			ram[i].end = start;
		}
	}
}

static void zero_page(u64 pa) { memset((void *)pa, 0, PAGE); /* lib.c: fast under TCG */ }

u64 page_alloc(void)
{
	u64 pa = 0;
	if (free_list) {
		pa = free_list;
		free_list = *(u64 *)pa;
		free_count--;
	} else {
		for (int i = 0; i < nram && !pa; i++) {
			if (ram[i].end - ram[i].start >= PAGE) {
				pa = ram[i].start;
				ram[i].start += PAGE;
			}
		}
	}
	if (!pa)
		panic("out of memory (%lu KiB free in pieces)", mm_free_bytes() >> 10);
	zero_page(pa);
	return pa;
}

void page_free(u64 pa)
{
	*(u64 *)pa = free_list;
	free_list = pa;
	free_count++;
}

/* contig_alloc hands out physically contiguous memory aligned to align
 * (a power of two, at least a page); the pages skipped to align it go
 * to the free list. */
u64 contig_alloc(u64 bytes, u64 align)
{
	bytes = (bytes + PAGE - 1) & ~(PAGE - 1);
	if (align < PAGE)
		align = PAGE;
	for (int i = 0; i < nram; i++) {
		u64 pa = (ram[i].start + align - 1) & ~(align - 1);
		if (pa < ram[i].start || pa + bytes > ram[i].end || pa + bytes < pa)
			continue;
		for (u64 p = ram[i].start; p < pa; p += PAGE)
			page_free(p);
		ram[i].start = pa + bytes;
		memset((void *)pa, 0, bytes);
		return pa;
	}
	return 0;
}

u64 mm_free_bytes(void)
{
	u64 n = free_count * PAGE;
	for (int i = 0; i < nram; i++)
		n += ram[i].end - ram[i].start;
	return n;
}

/*
 * mm_init_paging extends entry.S's 0-4 GiB identity map over RAM above
 * 4 GiB, in 2 MiB pages (SDM 4.5.4, a PDE with PS=1).
 */
void mm_init_paging(u64 ram_top)
{
	ident_top = 4UL << 30;
	u64 top = (ram_top + (1UL << 30) - 1) & ~((1UL << 30) - 1);
	if (top > (512UL << 30))
		top = 512UL << 30; /* one PML4 entry's worth; more RAM stays unused */
	u64 *pdpt = (u64 *)(boot_pml4[0] & PTE_ADDR);
	for (u64 gb = ident_top; gb < top; gb += 1UL << 30) {
		u64 *pd = (u64 *)page_alloc();
		for (int i = 0; i < 512; i++)
			pd[i] = (gb + ((u64)i << 21)) | PTE_P | PTE_W | PTE_PS;
		pdpt[gb >> 30] = (u64)pd | PTE_P | PTE_W;
	}
	if (top > ident_top)
		ident_top = top;
}

/* mm_unmap_low takes away [0, 64 KiB), once the boot data there is copied. */
void mm_unmap_low(void)
{
	for (u64 va = 0; va < IDENT_MIN; va += PAGE) {
		boot_pt0[va / PAGE] = 0;
		invlpg(va);
	}
}

/* pte returns the page-table entry of va (above ident_top), creating the
 * tables on the way when create is set; NULL when absent. */
static u64 *pte(u64 va, int create)
{
	u64 *t = boot_pml4;
	for (int shift = 39; shift > 12; shift -= 9) {
		u64 *e = &t[(va >> shift) & 511];
		if (!(*e & PTE_P)) {
			if (!create)
				return NULL;
			*e = page_alloc() | PTE_P | PTE_W;
		}
		if (*e & PTE_PS)
			return NULL; /* inside the identity map */
		t = (u64 *)(*e & PTE_ADDR);
	}
	return &t[(va >> 12) & 511];
}

/* /init's zero-filled tail that is zeroed on first touch: mm_zero_lazily. */
static u64 lazy_start, lazy_end;

/*
 * ident_pte returns the 4 KiB page-table entry of va inside the identity
 * map, splitting its 2 MiB page into 512 small ones of the same mapping
 * first (SDM 4.5.4: a PDE without PS points at a page table).
 */
static u64 *ident_pte(u64 va)
{
	u64 *t = boot_pml4, *e = NULL;
	for (int shift = 39; shift >= 21; shift -= 9) {
		e = &t[(va >> shift) & 511];
		if (!(*e & PTE_P) && shift == 21 && va >= lazy_start && va < lazy_end)
			*e = page_alloc() | PTE_P | PTE_W; /* a lazy 2 MiB: all absent */
		if (!(*e & PTE_P))
			panic("%lx is outside the identity map", va);
		if (*e & PTE_PS)
			break;
		t = (u64 *)(*e & PTE_ADDR);
	}
	if (*e & PTE_PS) {
		u64 base = *e & PTE_ADDR & ~((1UL << 21) - 1);
		u64 *pt = (u64 *)page_alloc();
		for (int i = 0; i < 512; i++)
			pt[i] = (base + ((u64)i << 12)) | PTE_P | PTE_W;
		*e = (u64)pt | PTE_P | PTE_W; /* the same translations: no flush needed yet */
		return &pt[(va >> 12) & 511];
	}
	return &((u64 *)(*e & PTE_ADDR))[(va >> 12) & 511];
}

/*
 * mm_map_image points the identity-mapped virtual pages [va, va + len)
 * at the physical pages from pa on: /init's file-backed pages are used
 * where the loader left the module instead of being copied to their link
 * address. The physical pages at va stay reserved and unused; mm_phys
 * walks the table.
 */
void mm_map_image(u64 va, u64 pa, u64 len)
{
	for (u64 end = va + len; va < end; va += PAGE, pa += PAGE)
		*ident_pte(va) = pa | PTE_P | PTE_W;
}

/*
 * mm_write writes n bytes of src (zeros when src is NULL) at /init's link
 * address va, in fresh pages from the allocator mapped there in place of
 * the identity pages: a segment's partial first and last pages. The
 * allocator hands out pages in order, so they lie beside the page tables
 * and the Go heap; the identity pages lie wherever the link address says,
 * and under QEMU a host page is backed on first touch (4 ms for each new
 * 2 MiB under a host's transparent huge pages, measured). The bytes go in
 * through the identity map of the new page, as the TLB is not flushed
 * until mm_flush_tlb.
 */
void mm_write(u64 va, const u8 *src, u64 n)
{
	for (u64 end = va + n; va < end;) {
		u64 page = va & ~(PAGE - 1), m = page + PAGE - va;
		if (m > end - va)
			m = end - va;
		u64 *e = ident_pte(page), pa = *e & PTE_ADDR;
		if (pa == page) {
			pa = page_alloc();
			*e = pa | PTE_P | PTE_W;
		}
		if (src) {
			memcpy((void *)(pa + (va - page)), src, m);
			src += m;
		} else {
			memset((void *)(pa + (va - page)), 0, m);
		}
		va += m;
	}
}

/* mm_flush_tlb drops every cached translation (CR4.PGE is off), once
 * mm_map_image and mm_zero_lazily are done: one flush, not one invlpg
 * per page, which cost 17 ms for /init's 3,500 pages under TCG. */
void mm_flush_tlb(void)
{
	__asm__ volatile("mov %%cr3, %%rax; mov %%rax, %%cr3" ::: "rax", "memory");
}

/*
 * The whole pages of /init's zero-filled tail (Go's .bss and .noptrbss:
 * 34 MiB, 32 of them crypto/internal/fips140/drbg's buffer that nothing
 * touches outside FIPS mode) are zeroed on first touch, as Linux maps
 * them, rather than up front: that memset took 127 ms under TCG. Each
 * is a page from the allocator, as in mm_write; the identity pages
 * beneath stay reserved and unused.
 */
int mm_zero_lazily(u64 va, u64 len)
{
	if (lazy_end || (va & (PAGE - 1)) || (len & (PAGE - 1)))
		return -1; /* one range, whole pages: the caller zeroes the rest */
	u64 end = va + len;
	for (u64 p = va; p < end;) {
		u64 big = p & ~((1UL << 21) - 1);
		if (big == p && p + (1UL << 21) <= end) { /* a whole 2 MiB page: its PDE goes */
			u64 *pdpt = (u64 *)(boot_pml4[(p >> 39) & 511] & PTE_ADDR);
			u64 *pd = (u64 *)(pdpt[(p >> 30) & 511] & PTE_ADDR);
			pd[(p >> 21) & 511] = 0;
			p += 1UL << 21;
		} else {
			*ident_pte(p) = 0;
			p += PAGE;
		}
	}
	lazy_start = va;
	lazy_end = end;
	return 0;
}

/* lazy_fault maps and zeroes the block of FAULT_AROUND pages around va's
 * that are still absent, within the lazy range; 1 when va is not in it. */
#define FAULT_AROUND (16 * PAGE)

static int lazy_fault(u64 va)
{
	if (va < lazy_start || va >= lazy_end)
		return 1;
	u64 start = va & ~(FAULT_AROUND - 1), end = start + FAULT_AROUND;
	if (start < lazy_start)
		start = lazy_start;
	if (end > lazy_end)
		end = lazy_end;
	for (u64 p = start; p < end; p += PAGE) {
		u64 *e = ident_pte(p);
		if (*e & PTE_P)
			continue;
		*e = page_alloc() | PTE_P | PTE_W; /* never cached while absent: no invlpg */
	}
	return 0;
}

/* free_pages drops every page mapped in [start, end), skipping absent
 * tables a level at a time, so a 512 MiB reservation is cheap. */
static void free_pages(u64 start, u64 end)
{
	for (u64 va = start; va < end;) {
		u64 *t = boot_pml4;
		int shift, skip = 0;
		for (shift = 39; shift > 12; shift -= 9) {
			u64 e = t[(va >> shift) & 511];
			if (!(e & PTE_P) || (e & PTE_PS)) {
				skip = 1;
				break;
			}
			t = (u64 *)(e & PTE_ADDR);
		}
		if (skip) {
			va = (va + (1UL << shift)) & ~((1UL << shift) - 1);
			continue;
		}
		u64 *p = &t[(va >> 12) & 511];
		if (*p & PTE_P) {
			page_free(*p & PTE_ADDR);
			*p = 0;
			invlpg(va);
		}
		va += PAGE;
	}
}

/* The mappings, sorted and disjoint. prot 0 is a reservation. */
#define NVMA 512
static struct vma { u64 start, end; int prot; } vmas[NVMA];
static int nvma;
static u64 mmap_next = MMAP_BASE;

static struct vma *vma_find(u64 va)
{
	for (int i = 0; i < nvma; i++)
		if (va >= vmas[i].start && va < vmas[i].end)
			return &vmas[i];
	return NULL;
}

static int vma_overlaps(u64 start, u64 end)
{
	for (int i = 0; i < nvma; i++)
		if (start < vmas[i].end && end > vmas[i].start)
			return 1;
	return 0;
}

/* vma_cut removes [start, end) from the mappings (splitting one that
 * straddles it); 0, or -ENOMEM when the table is full. */
static int vma_cut(u64 start, u64 end)
{
	for (int i = 0; i < nvma; i++) {
		struct vma *v = &vmas[i];
		if (end <= v->start || start >= v->end)
			continue;
		if (start > v->start && end < v->end) {
			if (nvma == NVMA)
				return -ENOMEM;
			for (int j = nvma; j > i + 1; j--)
				vmas[j] = vmas[j - 1];
			nvma++;
			vmas[i + 1].start = end;
			vmas[i + 1].end = v->end;
			vmas[i + 1].prot = v->prot;
			v->end = start;
			return 0;
		}
		if (start <= v->start && end >= v->end) {
			for (int j = i; j < nvma - 1; j++)
				vmas[j] = vmas[j + 1];
			nvma--;
			i--;
		} else if (start <= v->start) {
			v->start = end;
		} else {
			v->end = start;
		}
	}
	return 0;
}

static int vma_insert(u64 start, u64 end, int prot)
{
	int i = 0;
	while (i < nvma && vmas[i].start < start)
		i++;
	/* Merge with a neighbour of the same protection. */
	if (i > 0 && vmas[i - 1].end == start && vmas[i - 1].prot == prot) {
		vmas[i - 1].end = end;
		if (i < nvma && vmas[i].start == end && vmas[i].prot == prot) {
			vmas[i - 1].end = vmas[i].end;
			for (int j = i; j < nvma - 1; j++)
				vmas[j] = vmas[j + 1];
			nvma--;
		}
		return 0;
	}
	if (i < nvma && vmas[i].start == end && vmas[i].prot == prot) {
		vmas[i].start = start;
		return 0;
	}
	if (nvma == NVMA)
		return -ENOMEM;
	for (int j = nvma; j > i; j--)
		vmas[j] = vmas[j - 1];
	vmas[i].start = start;
	vmas[i].end = end;
	vmas[i].prot = prot;
	nvma++;
	return 0;
}

int vma_add_fixed(u64 start, u64 end, int prot)
{
	int err = vma_cut(start, end);
	if (err)
		return err;
	free_pages(start, end);
	return vma_insert(start, end, prot);
}

#define MAP_SHARED 0x01
#define MAP_PRIVATE 0x02
#define MAP_FIXED 0x10
#define MAP_ANONYMOUS 0x20
#define MAP_FIXED_NOREPLACE 0x100000

static int in_user(u64 start, u64 end)
{
	return start >= ident_top && end <= USER_TOP && start < end;
}

i64 sys_mmap(u64 addr, u64 len, u64 prot, u64 flags, i64 fd, u64 off)
{
	(void)off;
	if (!(flags & MAP_ANONYMOUS) || (int)fd != -1) /* fd is an int: the upper half is junk */
		return -ENODEV; /* no files to map */
	if (len == 0 || len > USER_TOP)
		return -EINVAL;
	len = (len + PAGE - 1) & ~(PAGE - 1);
	int p = prot & (PROT_READ | PROT_WRITE | PROT_EXEC);
	if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) {
		if ((addr & (PAGE - 1)) || !in_user(addr, addr + len))
			return -EINVAL;
		if ((flags & MAP_FIXED_NOREPLACE) && vma_overlaps(addr, addr + len))
			return -EEXIST;
		int err = vma_add_fixed(addr, addr + len, p);
		return err ? err : (i64)addr;
	}
	/* A hint is taken when it is free, as Linux does; the Go runtime
	 * places its heap arenas this way. */
	addr &= ~(PAGE - 1);
	if (!addr || !in_user(addr, addr + len) || vma_overlaps(addr, addr + len)) {
		while (vma_overlaps(mmap_next, mmap_next + len))
			mmap_next += len;
		addr = mmap_next;
		if (!in_user(addr, addr + len) || addr + len > STACK_TOP - (1UL << 40))
			return -ENOMEM;
		mmap_next += len;
	}
	int err = vma_insert(addr, addr + len, p);
	return err ? err : (i64)addr;
}

i64 sys_munmap(u64 addr, u64 len)
{
	len = (len + PAGE - 1) & ~(PAGE - 1);
	if ((addr & (PAGE - 1)) || !in_user(addr, addr + len))
		return -EINVAL;
	int err = vma_cut(addr, addr + len);
	if (err)
		return err;
	free_pages(addr, addr + len);
	return 0;
}

#define MADV_DONTNEED 4
#define MADV_FREE 8

/* madvise: DONTNEED and FREE give the pages back (the next touch reads
 * zeros, as Linux promises for private anonymous memory); the hugepage
 * hints are accepted and change nothing. */
i64 sys_madvise(u64 addr, u64 len, u64 advice)
{
	len = (len + PAGE - 1) & ~(PAGE - 1);
	if (addr & (PAGE - 1))
		return -EINVAL;
	if (advice == MADV_DONTNEED || advice == MADV_FREE) {
		if (in_user(addr, addr + len))
			free_pages(addr, addr + len);
		return 0;
	}
	return 0;
}

/* page_fault resolves a #PF at addr (SDM 4.7: err bit 0 present, bit 1
 * write): 0 when a page was mapped, else the SIGSEGV si_code. */
/*
 * fault_around maps the rest of the aligned 64 KiB block around a
 * faulting page, as far as its VMA goes: the Go heap and stacks are
 * touched in runs, and under QEMU's TCG a fault costs tens of
 * microseconds, so taking sixteen pages per fault cut /init's start.
 * The block never crosses a page table (2 MiB), so one lookup serves.
 */
static void fault_around(struct vma *v, u64 va)
{
	u64 start = va & ~(FAULT_AROUND - 1), end = start + FAULT_AROUND;
	if (start < v->start)
		start = v->start;
	if (end > v->end)
		end = v->end;
	u64 *first = pte(start, 1);
	for (u64 p = start; p < end; p += PAGE, first++)
		if (!(*first & PTE_P))
			*first = page_alloc() | PTE_P | PTE_W; /* never cached not-present: no invlpg */
}

int page_fault(u64 addr, u64 err)
{
	if (addr < ident_top) /* /init's lazy tail, else [0, 64 KiB): a nil dereference */
		return (err & 1) ? 2 : lazy_fault(addr & ~(PAGE - 1));
	struct vma *v = vma_find(addr);
	if (!v)
		return 1;
	if ((err & 1) || !v->prot || ((err & 2) && !(v->prot & PROT_WRITE)))
		return 2; /* SEGV_ACCERR */
	u64 va = addr & ~(PAGE - 1);
	u64 *e = pte(va, 1);
	if (!(*e & PTE_P)) {
		*e = page_alloc() | PTE_P | PTE_W;
		invlpg(va);
	}
	fault_around(v, va);
	return 0;
}

int user_ok(u64 addr, u64 len, int write)
{
	if (len == 0)
		return 0;
	if (addr + len < addr || addr < IDENT_MIN || addr + len > USER_TOP)
		return -EFAULT;
	for (u64 va = addr & ~(PAGE - 1); va < addr + len; va += PAGE) {
		if (va < ident_top) {
			if (va >= lazy_start && va < lazy_end)
				lazy_fault(va);
			continue;
		}
		u64 *e = pte(va, 0);
		if (e && (*e & PTE_P))
			continue;
		if (page_fault(va, write ? 2 : 0))
			return -EFAULT;
	}
	return 0;
}

/* The main thread's stack: 8 MiB, demand paged like the rest. */
u64 mm_main_stack(void)
{
	if (vma_add_fixed(STACK_TOP - (8UL << 20), STACK_TOP, PROT_READ | PROT_WRITE))
		panic("no room for the stack");
	return STACK_TOP;
}

/* mm_phys translates a virtual address of the Go process, mapping the
 * page first if it is demand paged and not yet touched; 0 when there is
 * none. A page, once mapped, stays at its physical address until it is
 * unmapped or given back with madvise: the shim never moves memory. */
u64 mm_phys(u64 va)
{
	if (va < IDENT_MIN)
		return 0;
	if (va < ident_top) { /* identity, but for mm_map_image's pages */
		if (va >= lazy_start && va < lazy_end)
			lazy_fault(va & ~(PAGE - 1));
		u64 *e = pte(va & ~(PAGE - 1), 0);
		return e && (*e & PTE_P) ? (*e & PTE_ADDR) | (va & (PAGE - 1)) : va;
	}
	if (user_ok(va, 1, 0))
		return 0;
	u64 *e = pte(va & ~(PAGE - 1), 0);
	return e && (*e & PTE_P) ? (*e & PTE_ADDR) | (va & (PAGE - 1)) : 0;
}
