/*
 * pvh.c: the PVH boot protocol (Xen's public/arch-x86/hvm/start_info.h,
 * which QEMU's -kernel implements through pvh.bin): the start_info that
 * EBX points at on entry, read into a struct bootinfo.
 */
#include "shim.h"

/* start_info.h, version 1. */
struct hvm_start_info {
	u32 magic, version, flags, nr_modules;
	u64 modlist_paddr, cmdline_paddr, rsdp_paddr;
	u64 memmap_paddr;
	u32 memmap_entries, reserved;
};
struct hvm_modlist_entry { u64 paddr, size, cmdline_paddr, reserved; };
#define HVM_START_MAGIC 0x336ec578

void pvh_parse(u32 info_pa, struct bootinfo *bi)
{
	struct hvm_start_info *si = (struct hvm_start_info *)(u64)info_pa;
	bi->loader = "PVH";
	if (si->magic != HVM_START_MAGIC)
		panic("no PVH start info (magic %x): boot with a PVH loader such as QEMU -kernel", si->magic);
	if (si->version < 1 || !si->memmap_entries)
		panic("the PVH start info has no memory map (version %u)", si->version);
	bi->cmdline = (const char *)si->cmdline_paddr;
	if (si->nr_modules < 1)
		panic("no /init: pass the Go binary as the first module (QEMU -initrd)");
	struct hvm_modlist_entry *mod = (struct hvm_modlist_entry *)si->modlist_paddr;
	bi->mod_start = mod->paddr;
	bi->mod_size = mod->size;
	bi->rsdp = si->rsdp_paddr;
	/* hvm_memmap_entry is laid out as struct boot_mem (E820's entry). */
	bi->nmem = si->memmap_entries < BOOT_MAXMEM ? si->memmap_entries : BOOT_MAXMEM;
	memcpy(bi->mem, (void *)si->memmap_paddr, bi->nmem * sizeof bi->mem[0]);
}
