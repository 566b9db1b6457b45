/*
 * boot.c: from the boot protocol's information to the first instruction
 * of /init.
 *
 * The Go binary arrives as the first module (QEMU's -initrd through PVH,
 * GRUB's module2 through Multiboot2): the shim is built once and any
 * /init boots on it unchanged, the way Linux gets its initramfs, and the
 * command line comes the same way (-append, multiboot2's arguments).
 * pvh.c and multiboot.c read their protocol into a struct bootinfo;
 * nothing below depends on which one it was.
 */
#include "shim.h"

extern char __shim_start[], __shim_end[], idle_loop[], vdso_start[];
void enter_frame(struct regs *r) __attribute__((noreturn));

char boot_cmdline[4096];

/* ELF64 (the System V gABI). */
struct elf64_ehdr {
	u8 ident[16];
	u16 type, machine;
	u32 version;
	u64 entry, phoff, shoff;
	u32 flags;
	u16 ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};
struct elf64_phdr { u32 type, flags; u64 offset, vaddr, paddr, filesz, memsz, align; };
#define PT_LOAD 1

static struct { u64 start, end; } loads[16];
static int nloads;

static int overlaps(u64 a, u64 b, u64 c, u64 d) { return a < d && c < b; }

/* in_ram reports whether [s, e) is RAM, in one or more neighbouring
 * entries of the memory map. */
static int in_ram(u64 s, u64 e, const struct boot_mem *mm, u32 nmm)
{
	while (s < e) {
		u64 next = s;
		for (u32 j = 0; j < nmm; j++)
			if (mm[j].type == 1 && s >= mm[j].addr && s < mm[j].addr + mm[j].size)
				next = mm[j].addr + mm[j].size;
		if (next == s)
			return 0;
		s = next;
	}
	return 1;
}

/* check_elf validates the module as a static x86-64 executable whose
 * segments fit in RAM that is neither the shim's nor the module's. */
static struct elf64_ehdr *check_elf(u64 mod, u64 size, const struct boot_mem *mm, u32 nmm)
{
	struct elf64_ehdr *e = (struct elf64_ehdr *)mod;
	if (size < sizeof *e || memcmp(e->ident, "\177ELF", 4) || e->ident[4] != 2 || e->ident[5] != 1)
		panic("the module is not a little-endian ELF64 file");
	if (e->type != 2 || e->machine != 62)
		panic("the module is not an x86-64 executable (type %u machine %u): build /init with CGO_ENABLED=0, not as PIE", e->type, e->machine);
	if (e->phentsize != sizeof(struct elf64_phdr) || e->phoff + (u64)e->phnum * e->phentsize > size)
		panic("bad ELF program headers");
	struct elf64_phdr *ph = (struct elf64_phdr *)(mod + e->phoff);
	for (int i = 0; i < e->phnum; i++) {
		if (ph[i].type == 3) /* PT_INTERP */
			panic("/init is dynamically linked: build it with CGO_ENABLED=0");
		if (ph[i].type != PT_LOAD || !ph[i].memsz)
			continue;
		u64 s = ph[i].vaddr, end = s + ph[i].memsz;
		if (ph[i].filesz > ph[i].memsz || ph[i].offset + ph[i].filesz > size || end < s || nloads == 16)
			panic("bad PT_LOAD %d", i);
		if (s < (1UL << 20) || overlaps(s, end, (u64)__shim_start, (u64)__shim_end))
			panic("/init's segment %lx-%lx overlaps the shim (%p-%p)", s, end, __shim_start, __shim_end);
		/* What load_elf writes at the link address must be RAM: the
		 * whole segment, or when its file pages can be mapped where the
		 * module lies, only its partial pages and its zero tail. UEFI
		 * firmware keeps reserved holes there (OVMF: 0x806000-0x808000
		 * and 0x810000-0x900000, inside /init's text). */
		u64 first = (s + PAGE - 1) & ~(PAGE - 1), last = (s + ph[i].filesz) & ~(PAGE - 1);
		if (((mod + ph[i].offset) ^ s) & (PAGE - 1) || first >= last)
			first = last = s;
		if (!in_ram(s, first, mm, nmm) || !in_ram(last, end, mm, nmm))
			panic("/init's segment %lx-%lx is not in RAM: give the machine more memory", s, end);
		loads[nloads].start = s;
		loads[nloads].end = end;
		nloads++;
	}
	return e;
}

/*
 * move_module copies the module out of the way when it lies where
 * /init's segments load (GRUB puts modules right above the shim, where
 * the Go binary's 4 MiB link address is): to the highest RAM below
 * 4 GiB (what the boot page tables map) that meets neither the shim, the
 * segments nor the module itself. It returns the module's address.
 */
static u64 move_module(u64 mod, u64 size, const struct boot_mem *mm, u32 nmm)
{
	int hit = 0;
	for (int i = 0; i < nloads; i++)
		hit |= overlaps(loads[i].start, loads[i].end, mod, mod + size);
	if (!hit)
		return mod;
	struct { u64 start, end; } busy[18] = {{(u64)__shim_start, (u64)__shim_end}, {mod, mod + size}};
	int nbusy = 2;
	for (int i = 0; i < nloads; i++, nbusy++)
		busy[nbusy].start = loads[i].start, busy[nbusy].end = loads[i].end;
	u64 best = 0;
	for (u32 j = 0; j < nmm; j++) {
		if (mm[j].type != 1)
			continue;
		u64 lo = mm[j].addr < (1UL << 20) ? 1UL << 20 : mm[j].addr;
		u64 hi = mm[j].addr + mm[j].size > (4UL << 30) ? 4UL << 30 : mm[j].addr + mm[j].size;
		/* The highest place in the range ends at its top or just below
		 * something in the way. */
		for (int k = -1; k < nbusy; k++) {
			u64 top = k < 0 ? hi : busy[k].start;
			if (top > hi || top < lo + size)
				continue;
			u64 at = (top - size) & ~(PAGE - 1);
			int clear = at >= lo && at > best;
			for (int b = 0; b < nbusy && clear; b++)
				clear = !overlaps(at, at + size, busy[b].start, busy[b].end);
			if (clear)
				best = at;
		}
	}
	if (!best)
		panic("no room to move /init's module (%lx-%lx) out of the way of its segments: give the machine more memory",
		      mod, mod + size);
	memcpy((void *)best, (void *)mod, size);
	return best;
}

/* shares_pages reports whether a segment other than the one at va has
 * bytes in the pages [s, e). */
static int shares_pages(u64 s, u64 e, u64 va)
{
	for (int i = 0; i < nloads; i++)
		if (loads[i].start != va && overlaps(loads[i].start & ~(PAGE - 1), loads[i].end, s, e))
			return 1;
	return 0;
}

/*
 * load_elf puts /init's segments at their link addresses. The pages a
 * segment's file bytes fill whole are mapped where the module lies (the
 * Go linker keeps offset and address congruent modulo the page, as the
 * gABI asks of PT_LOAD); only a segment's partial first and last pages
 * and its zero-filled tail are written, in fresh pages (mm_write). It returns
 * the end of the module's bytes still in use, in bytes from its start.
 */
static u64 load_elf(u64 mod, struct elf64_ehdr *e, u64 *mapped)
{
	struct elf64_phdr *ph = (struct elf64_phdr *)(mod + e->phoff);
	u64 used = 0;
	for (int i = 0; i < e->phnum; i++) {
		if (ph[i].type != PT_LOAD || !ph[i].memsz)
			continue;
		u64 va = ph[i].vaddr, fend = va + ph[i].filesz, src = mod + ph[i].offset;
		u64 first = (va + PAGE - 1) & ~(PAGE - 1), last = fend & ~(PAGE - 1);
		if (((src ^ va) & (PAGE - 1)) || first >= last)
			first = last = fend; /* nothing whole to map: copy it all */
		else {
			mm_map_image(first, src + (first - va), last - first);
			*mapped += last - first;
			if (ph[i].offset + (last - va) > used)
				used = ph[i].offset + (last - va);
		}
		mm_write(va, (const u8 *)src, first - va);
		mm_write(last, (const u8 *)(src + (last - va)), fend - last);
		u64 end = va + ph[i].memsz, zs = (fend + PAGE - 1) & ~(PAGE - 1), ze = (end + PAGE - 1) & ~(PAGE - 1);
		if (zs >= end || shares_pages(zs, ze, va) || mm_zero_lazily(zs, ze - zs))
			zs = end;
		mm_write(fend, NULL, zs - fend);
	}
	mm_flush_tlb();
	return used;
}

/*
 * initial_stack lays out what Linux gives a new process (the System V
 * x86-64 ABI, 3.4.1): argc, argv, NULL, envp, NULL, the auxiliary vector,
 * and the strings above. Go reads AT_PAGESZ, AT_RANDOM (its hash seed)
 * and AT_HWCAP, and finds clock_gettime in the vDSO at AT_SYSINFO_EHDR.
 */
#define MAXENV 16

/* env_word reports whether the command line's word w (n bytes) is
 * NAME=value with NAME in capitals, digits and '_': such words go to
 * /init's environment (GODEBUG=inittrace=1), as Linux hands init the
 * words it does not know. */
static int env_word(const char *w, u64 n)
{
	u64 i = 0;
	while (i < n && ((w[i] >= 'A' && w[i] <= 'Z') || w[i] == '_' || (i && w[i] >= '0' && w[i] <= '9')))
		i++;
	return i > 0 && i < n && w[i] == '=';
}

static u64 initial_stack(u64 top, struct elf64_ehdr *e)
{
	static const char *const argv[] = {"/init"};
	const char *envp[MAXENV] = {"HOME=/", "TERM=linux"};
	u64 envn[MAXENV] = {6, 10};
	int nenv = 2;
	u64 total = 0; /* the strings, the vectors and the auxv share the stack's first page */
	for (const char *c = boot_cmdline; *c && nenv < MAXENV;) {
		while (*c == ' ')
			c++;
		u64 n = 0;
		while (c[n] && c[n] != ' ')
			n++;
		if (n && total + n < 2048 && env_word(c, n)) {
			total += n + 1;
			envp[nenv] = c;
			envn[nenv++] = n;
		}
		c += n;
	}
	u64 sp = top;
	u64 sargv[1], senvp[MAXENV];
	if (user_ok(top - PAGE, PAGE, 1))
		panic("cannot map the stack");
	for (int i = nenv - 1; i >= 0; i--) {
		sp -= envn[i] + 1;
		memcpy((void *)sp, envp[i], envn[i]);
		*(char *)(sp + envn[i]) = 0;
		senvp[i] = sp;
	}
	sp -= strlen(argv[0]) + 1;
	memcpy((void *)sp, argv[0], strlen(argv[0]) + 1);
	sargv[0] = sp;
	sp &= ~15UL;
	sp -= 16;
	u64 rnd = sp;
	u64 seed = rdtsc();
	if (rdrand_fill(rnd, 16) != 16) {
		for (int i = 0; i < 2; i++) { /* no RDRAND: the TSC, mixed */
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			((u64 *)rnd)[i] = seed;
		}
	}
	u32 c[4];
	cpuid(1, 0, c);
	u64 auxv[][2] = {
		{6, PAGE},           /* AT_PAGESZ */
		{16, c[3]},          /* AT_HWCAP: CPUID.01H:EDX, as Linux gives it */
		{17, 100},           /* AT_CLKTCK */
		{9, e->entry},       /* AT_ENTRY */
		{11, 0}, {12, 0}, {13, 0}, {14, 0}, /* AT_UID, EUID, GID, EGID */
		{23, 0},             /* AT_SECURE */
		{25, rnd},           /* AT_RANDOM */
		{33, (u64)vdso_start}, /* AT_SYSINFO_EHDR: the vDSO (vdso.S) */
		{0, 0},              /* AT_NULL */
	};
	u64 words = 1 + 2 + nenv + 1 + 2 * (sizeof auxv / sizeof auxv[0]);
	sp -= words * 8;
	sp &= ~15UL; /* RSP is 16-byte aligned at the entry point */
	u64 *w = (u64 *)sp;
	*w++ = 1;
	*w++ = sargv[0];
	*w++ = 0;
	for (int i = 0; i < nenv; i++)
		*w++ = senvp[i];
	*w++ = 0;
	memcpy(w, auxv, sizeof auxv);
	return sp;
}

/* What the loader said, kept for metal_memmap. */
static struct bootinfo bi;

/* boot_memmap returns the loader's memory map (E820 types). */
const struct boot_mem *boot_memmap(u32 *n)
{
	*n = bi.nmem;
	return bi.mem;
}

/* boot_main: from entry.S, with the protocol that started the shim
 * (BOOT_PVH or BOOT_MULTIBOOT2), its information's physical address and,
 * for Multiboot2, EAX as the loader left it. */
void boot_main(u32 proto, u32 info_pa, u32 magic)
{
	u64 t0 = rdtsc();
	serial_init(0x3f8, 115200); /* COM1, until console_choose */
	kprintf("\nmetal: shim started\n"); /* after the firmware's last words */
	/* Exceptions print the registers from here on, whatever the
	 * firmware left in the IDT. */
	trap_init();

	/* Copy what lives in the loader's memory before any page is handed
	 * out or [0, 64 KiB) is unmapped. */
	if (proto == BOOT_MULTIBOOT2)
		multiboot2_parse(magic, info_pa, &bi);
	else
		pvh_parse(info_pa, &bi);
	if (bi.cmdline) {
		u64 n = strlen(bi.cmdline);
		if (n >= sizeof boot_cmdline)
			n = sizeof boot_cmdline - 1;
		memcpy(boot_cmdline, bi.cmdline, n);
		bi.cmdline = NULL;
	}
	for (const char *c = boot_cmdline; *c; c++)
		if (!memcmp(c, "metal.strace", 12))
			strace = 1;
		else if (!memcmp(c, "metal.x2apic", 12))
			x2apic_wanted = 1;
		else if (!memcmp(c, "metal.clock=hpet", 16))
			hpet_wanted = 1;
	console_choose(boot_cmdline, bi.rsdp);
	const struct boot_mem *mm = bi.mem;
	u32 nmm = bi.nmem;
	struct { u64 paddr, size; } mod = {bi.mod_start, bi.mod_size};
	u64 rsdp = bi.rsdp;

	u64 ram_top = 0, ram = 0;
	for (u32 i = 0; i < nmm; i++) {
		if (mm[i].type != 1)
			continue;
		mm_add_ram(mm[i].addr, mm[i].addr + mm[i].size);
		ram += mm[i].size;
		if (mm[i].addr + mm[i].size > ram_top)
			ram_top = mm[i].addr + mm[i].size;
	}
	if (!ram)
		panic("the %s memory map's %u entries hold no RAM (type 1)", bi.loader, nmm);
	kprintf("metal: booted through %s: %lu MiB of RAM in a map of %u entries, /init %lu KiB at %lx\n",
		bi.loader, ram >> 20, nmm, mod.size >> 10, mod.paddr);
	struct elf64_ehdr *e = check_elf(mod.paddr, mod.size, mm, nmm);
	u64 moved = move_module(mod.paddr, mod.size, mm, nmm);
	if (moved != mod.paddr) {
		kprintf("metal: /init's module moved from %lx to %lx, out of its segments' way\n", mod.paddr, moved);
		e = (struct elf64_ehdr *)moved;
		mod.paddr = moved;
	}
	mm_reserve((u64)__shim_start, (u64)__shim_end);
	mm_reserve(mod.paddr, mod.paddr + mod.size);
	for (int i = 0; i < nloads; i++)
		mm_reserve(loads[i].start, loads[i].end);
	mm_init_paging(ram_top);
	acpi_init(rsdp); /* first: a panic powers off through the FADT */
	/* getrandom is RDRAND (syscall.c): without it Go's crypto/rand, which
	 * the admin token and TCP's initial sequence numbers draw from, dies
	 * at its first read, naming a /dev/urandom there is none of. */
	u32 id[4];
	cpuid(1, 0, id);
	if (!(id[2] & (1U << 30)))
		panic("this CPU has no RDRAND (CPUID.01H:ECX bit 30), the shim's only entropy source for getrandom: boot the Linux-hosted platform on it");
	mm_unmap_low();
	time_init();
	ioapic_init();
	fs_init();

	u64 t1 = rdtsc(), mapped = 0;
	u64 used = load_elf(mod.paddr, e, &mapped);
	u64 load_us = tsc_ns(rdtsc() - t1) / 1000;
	mm_add_ram(mod.paddr + used, mod.paddr + mod.size); /* what no segment maps is spent */
	threads_init();
	struct thread *t = thread_new();
	struct regs *f = frame_of(t);
	memset(f, 0, sizeof *f);
	f->rip = e->entry;
	f->cs = KCODE;
	f->rflags = 0x202;
	f->rsp = initial_stack(mm_main_stack(), e);
	f->ss = KDATA;
	thread_start(t);
	kprintf("metal: /init %lu KiB at %lx (%lu KiB mapped in place, loaded in %lu us), %lu MiB free, %lu us in the shim; starting\n",
		mod.size >> 10, e->entry, mapped >> 10, load_us, mm_free_bytes() >> 20, tsc_ns(rdtsc() - t0) / 1000);
	enter_frame(f);
}
