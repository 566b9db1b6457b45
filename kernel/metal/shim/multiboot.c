/*
 * multiboot.c: the Multiboot2 boot protocol (the Multiboot2
 * Specification, version 2.0; "MB2 x.y" below), which GRUB's multiboot2
 * and module2 commands implement, so that the shim boots from a disk on
 * UEFI machines, where nothing speaks PVH. multiboot.S holds the header
 * a loader looks for and the entry it jumps to; this reads the boot
 * information EBX points at (MB2 3.6) into a struct bootinfo.
 */
#include "shim.h"

#define MB2_BOOT_MAGIC 0x36d76289 /* EAX at the entry (MB2 3.3) */

/* The boot information's tag types (MB2 3.6.3-3.6.17). */
enum {
	MB2_END = 0,
	MB2_CMDLINE = 1,  /* 3.6.5 */
	MB2_LOADER = 2,   /* 3.6.9 */
	MB2_MODULE = 3,   /* 3.6.6 */
	MB2_MMAP = 6,     /* 3.6.8 */
	MB2_ACPI_OLD = 14, /* 3.6.16: a copy of the ACPI 1.0 RSDP */
	MB2_ACPI_NEW = 15, /* 3.6.17: a copy of the ACPI 2.0+ RSDP (with the XSDT) */
};

/* The RSDP arrives as a copy inside the boot information, which is
 * free RAM once the shim runs: it is kept here, in the shim's own
 * memory, where acpi.c and kernel/metal (METAL_RSDP) read it by its
 * physical address as they read one the firmware placed. */
static u8 rsdp_copy[64] __attribute__((aligned(16)));
static char loader_name[64];

static u64 bounded_strlen(const u8 *s, u64 max)
{
	u64 n = 0;
	while (n < max && s[n])
		n++;
	return n;
}

static void keep_rsdp(struct bootinfo *bi, const u8 *body, u32 n, u32 tag)
{
	if (n > sizeof rsdp_copy)
		n = sizeof rsdp_copy;
	if (n < 20 || memcmp(body, "RSD PTR ", 8)) {
		kprintf("metal: Multiboot2 tag %u holds no RSDP (%u bytes); ignored\n", tag, n);
		return;
	}
	memset(rsdp_copy, 0, sizeof rsdp_copy);
	memcpy(rsdp_copy, body, n);
	bi->rsdp = (u64)rsdp_copy;
}

static void read_mmap(struct bootinfo *bi, const u8 *body, u32 n)
{
	/* entry_size and entry_version, then the entries; an entry's first
	 * 24 bytes are base_addr, length, type, reserved (MB2 3.6.8), which
	 * is struct boot_mem; a larger entry_size leaves room to grow. */
	if (n < 8)
		panic("the Multiboot2 memory map tag is %u bytes long", n + 8);
	u32 esize = *(const u32 *)body;
	if (esize < sizeof(struct boot_mem) || (esize & 7))
		panic("the Multiboot2 memory map's entries are %u bytes (want a multiple of 8, at least %u)",
		      esize, (u32)sizeof(struct boot_mem));
	for (u32 off = 8; off + esize <= n; off += esize) {
		const struct boot_mem *e = (const struct boot_mem *)(body + off);
		if (e->addr + e->size < e->addr)
			continue; /* wraps: no such memory */
		struct boot_mem *last = bi->nmem ? &bi->mem[bi->nmem - 1] : NULL;
		if (last && last->type == e->type && last->addr + last->size == e->addr) {
			/* GRUB gives each UEFI descriptor an entry of its own:
			 * join neighbours, so that a segment spanning two is
			 * in RAM. */
			last->size += e->size;
			continue;
		}
		if (bi->nmem == BOOT_MAXMEM) {
			kprintf("metal: the memory map has more than %u entries: the rest is not used\n", BOOT_MAXMEM);
			return;
		}
		bi->mem[bi->nmem++] = *e;
	}
}

void multiboot2_parse(u32 magic, u32 info_pa, struct bootinfo *bi)
{
	bi->loader = "Multiboot2";
	if (magic != MB2_BOOT_MAGIC)
		panic("entered at the Multiboot2 entry with EAX %x, not %x: the loader does not speak Multiboot2",
		      magic, MB2_BOOT_MAGIC);
	/* The information starts 8-byte aligned (MB2 3.6.2), in the
	 * identity map, above the page the shim unmaps only later. */
	if (!info_pa || (info_pa & 7))
		panic("the Multiboot2 information at %x is not 8-byte aligned", info_pa);
	const u8 *mbi = (const u8 *)(u64)info_pa;
	u32 total = *(const u32 *)mbi;
	if (total < 16 || total > (16U << 20))
		panic("the Multiboot2 information at %x claims %u bytes", info_pa, total);
	int nmods = 0, have_mmap = 0;
	const u8 *acpi_old = NULL, *acpi_new = NULL;
	u32 old_n = 0, new_n = 0;
	for (u32 off = 8;;) {
		if (off > total - 8)
			panic("the Multiboot2 information ends without an end tag");
		u32 type = *(const u32 *)(mbi + off), size = *(const u32 *)(mbi + off + 4);
		if (type == MB2_END)
			break;
		if (size < 8 || size > total - off)
			panic("Multiboot2 tag %u at offset %u: size %u does not fit the %u bytes", type, off, size, total);
		const u8 *body = mbi + off + 8;
		u32 n = size - 8;
		switch (type) {
		case MB2_CMDLINE:
			if (bounded_strlen(body, n) == n)
				panic("the Multiboot2 command line is not NUL-terminated");
			bi->cmdline = (const char *)body;
			break;
		case MB2_LOADER: {
			u64 l = bounded_strlen(body, n);
			if (l >= sizeof loader_name)
				l = sizeof loader_name - 1;
			memcpy(loader_name, body, l);
			loader_name[l] = 0;
			break;
		}
		case MB2_MODULE:
			/* mod_start, mod_end (exclusive), then its string. */
			if (n < 8)
				panic("Multiboot2 module tag of %u bytes", size);
			if (nmods++ == 0) {
				u32 start = *(const u32 *)body, end = *(const u32 *)(body + 4);
				if (end <= start)
					panic("the first Multiboot2 module is empty (%x-%x)", start, end);
				bi->mod_start = start;
				bi->mod_size = end - start;
			}
			break;
		case MB2_MMAP:
			have_mmap = 1;
			read_mmap(bi, body, n);
			break;
		case MB2_ACPI_OLD:
			acpi_old = body, old_n = n;
			break;
		case MB2_ACPI_NEW:
			acpi_new = body, new_n = n;
			break;
		}
		off += (size + 7) & ~7U; /* tags are 8-byte aligned */
	}
	if (loader_name[0])
		bi->loader = loader_name;
	if (!nmods)
		panic("no /init: the Multiboot2 loader passed no module (GRUB: module2 /init after multiboot2)");
	if (nmods > 1)
		kprintf("metal: %d Multiboot2 modules: the first is /init, the rest are not used\n", nmods);
	if (!have_mmap)
		panic("the Multiboot2 information has no memory map (tag 6)");
	if (acpi_new)
		keep_rsdp(bi, acpi_new, new_n, MB2_ACPI_NEW);
	if (!bi->rsdp && acpi_old)
		keep_rsdp(bi, acpi_old, old_n, MB2_ACPI_OLD);
	if (!bi->rsdp)
		kprintf("metal: the Multiboot2 loader gave no ACPI RSDP (tags 14 and 15): looking in the BIOS area\n");
}
