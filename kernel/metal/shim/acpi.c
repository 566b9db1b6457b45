/*
 * acpi.c: the ACPI tables the shim needs: the FADT (ACPI 5.2.9) for the
 * PM timer, power-off (PM1a_CNT with \_S5's SLP_TYPa, ACPI 7.4.2 and
 * 4.8.3.2.1) and reset (RESET_REG, ACPI 4.8.3.6); the MADT for the ISA
 * interrupts' wiring; the HPET table for the clock where there is no PM
 * timer; the SPCR for the console's UART.
 */
#include "shim.h"

static u32 pm_tmr, pm_tmr_32, pm1a_cnt, pm1b_cnt;
static u64 hpet_base;
static u16 slp_typa, slp_typb;
static int have_s5;
static u8 reset_space, reset_val;
static u64 reset_addr;
static u64 rsdp_addr;
static u32 isa_gsi[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

u32 acpi_isa_gsi(u32 irq) { return irq < 16 ? isa_gsi[irq] : irq; }

/* parse_madt reads the Interrupt Source Overrides (type 2): bus, source
 * IRQ, then the GSI it is wired to (ACPI 5.2.12.5). */
static void parse_madt(u8 *m)
{
	u32 len = *(u32 *)(m + 4);
	for (u32 off = 44; off + 2 <= len && m[off + 1] >= 2; off += m[off + 1])
		if (m[off] == 2 && m[off + 1] >= 10 && m[off + 3] < 16)
			isa_gsi[m[off + 3]] = *(u32 *)(m + off + 4);
}

u64 acpi_rsdp(void) { return rsdp_addr; }
u32 acpi_pm_timer_port(void) { return pm_tmr; }
u64 acpi_hpet_base(void) { return hpet_base; }
int acpi_pm_timer_32bit(void) { return pm_tmr_32; }

static int checksum_ok(const u8 *p, u64 n)
{
	u8 s = 0;
	for (u64 i = 0; i < n; i++)
		s += p[i];
	return s == 0;
}

/* find_rsdp scans the BIOS area (ACPI 5.2.5.1) when PVH gave none. */
static u64 find_rsdp(void)
{
	for (u64 a = 0xe0000; a < 0x100000; a += 16)
		if (!memcmp((void *)a, "RSD PTR ", 8) && checksum_ok((u8 *)a, 20))
			return a;
	return 0;
}

/*
 * parse_s5 finds \_S5's package in the DSDT's AML: NameOp (0x08) "_S5_"
 * PackageOp (0x12) PkgLength NumElements, then SLP_TYPa and SLP_TYPb as
 * ZeroOp (0), OneOp (1) or BytePrefix (0x0A) n (ACPI 20.2.3, 20.2.5).
 */
static u8 *aml_int(u8 *p, u16 *v)
{
	if (*p == 0x0a) {
		*v = p[1];
		return p + 2;
	}
	if (*p == 0x00 || *p == 0x01) {
		*v = *p;
		return p + 1;
	}
	return NULL;
}

static void parse_s5(u8 *dsdt)
{
	u32 len = *(u32 *)(dsdt + 4);
	for (u32 i = 36; i + 8 < len; i++) {
		u8 *p = dsdt + i;
		if (memcmp(p, "_S5_", 4) || (p[-1] != 0x08 && !(p[-2] == 0x08 && p[-1] == '\\')))
			continue;
		p += 4;
		if (*p++ != 0x12)
			continue;
		p += 1 + (*p >> 6); /* PkgLength: bits 7:6 count the bytes after the first */
		p++;                /* NumElements */
		if ((p = aml_int(p, &slp_typa)) && aml_int(p, &slp_typb))
			have_s5 = 1;
		return;
	}
}

static void parse_fadt(u8 *f)
{
	u32 len = *(u32 *)(f + 4);
	pm1a_cnt = *(u32 *)(f + 64);
	pm1b_cnt = *(u32 *)(f + 68);
	pm_tmr = *(u32 *)(f + 76);
	if (!pm_tmr && len >= 220 && f[208] == 1) /* X_PM_TMR_BLK, a GAS in I/O space */
		pm_tmr = (u32) * (u64 *)(f + 212);
	u32 flags = *(u32 *)(f + 112);
	pm_tmr_32 = (flags >> 8) & 1; /* TMR_VAL_EXT */
	if ((flags & (1 << 10)) && len >= 129) { /* RESET_REG_SUP */
		reset_space = f[116];
		reset_addr = *(u64 *)(f + 120);
		reset_val = f[128];
	}
	u64 dsdt = *(u32 *)(f + 40);
	if (len >= 148 && *(u64 *)(f + 140))
		dsdt = *(u64 *)(f + 140); /* X_DSDT */
	if (dsdt)
		parse_s5((u8 *)dsdt);
}

/* acpi_find_rsdp returns the RSDP the loader gave, else the one in the
 * BIOS area; 0 when there is none. */
u64 acpi_find_rsdp(u64 given)
{
	return given ? given : find_rsdp();
}

/* acpi_table returns the table signed sig that the RSDT or XSDT lists,
 * or NULL. Tables above 4 GiB, which the identity map may not reach, are
 * passed over. */
static u8 *acpi_table(u64 rsdp, const char *sig)
{
	if (!rsdp)
		return NULL;
	u8 *r = (u8 *)rsdp;
	u64 sdt = *(u32 *)(r + 16);
	int wide = 0;
	if (r[15] >= 2 && *(u64 *)(r + 24)) {
		sdt = *(u64 *)(r + 24); /* the XSDT, 64-bit entries */
		wide = 1;
	}
	if (!sdt || sdt >= 1UL << 32)
		return NULL;
	u8 *h = (u8 *)sdt;
	u32 n = (*(u32 *)(h + 4) - 36) / (wide ? 8 : 4);
	for (u32 i = 0; i < n; i++) {
		u64 t = wide ? *(u64 *)(h + 36 + 8 * i) : *(u32 *)(h + 36 + 4 * i);
		if (t && t < 1UL << 32 && !memcmp((void *)t, sig, 4))
			return (u8 *)t;
	}
	return NULL;
}

void acpi_init(u64 rsdp)
{
	rsdp = acpi_find_rsdp(rsdp);
	if (!rsdp) {
		kprintf("metal: no ACPI RSDP: no power-off, no PM timer\n");
		return;
	}
	rsdp_addr = rsdp;
	u8 *t;
	if ((t = acpi_table(rsdp, "FACP")))
		parse_fadt(t);
	if ((t = acpi_table(rsdp, "APIC")))
		parse_madt(t);
	/* The HPET table (IA-PC HPET 1.0a, 3.2.4): its registers' Generic
	 * Address Structure at 40, in memory space (0). */
	if ((t = acpi_table(rsdp, "HPET")) && *(u32 *)(t + 4) >= 56 && t[40] == 0)
		hpet_base = *(u64 *)(t + 44);
	if (!have_s5)
		kprintf("metal: no \\_S5 in the DSDT: power-off will halt\n");
}

/*
 * acpi_spcr reads the Serial Port Console Redirection table: the UART
 * firmware redirects its console to. Interface type (byte 36) 0, 1 or
 * 0x12 is a 16550 or compatible; the Generic Address Structure at 40
 * its registers (space 1: I/O); the interrupt type at 52 (bit 0: the
 * PC-AT IRQ at 53, bit 1: the global system interrupt at 54); the rate
 * at 58 (3: 9600, 4: 19200, 6: 57600, 7: 115200; 0, "as is", and
 * the undefined ones: 115200, which the shim set at its start). 1 when it
 * names a 16550 at an I/O port, filled into c.
 */
int acpi_spcr(u64 rsdp, struct console *c)
{
	static const u32 rates[8] = {115200, 115200, 115200, 9600, 19200, 115200, 57600, 115200};
	u8 *t = acpi_table(acpi_find_rsdp(rsdp), "SPCR");
	if (!t || *(u32 *)(t + 4) < 80)
		return 0;
	u8 type = t[36], space = t[40];
	u64 addr = *(u64 *)(t + 44);
	if (!addr)
		return 0; /* redirection off */
	if (type != 0 && type != 1 && type != 0x12) {
		kprintf("metal: SPCR names a UART of interface type %x, not a 16550: the console stays on %s\n", type, c->name);
		return 0;
	}
	if (space != 1 || addr > 0xfff8) {
		kprintf("metal: SPCR names a 16550 at %lx in address space %u, not an I/O port: the console stays on %s\n", addr, space, c->name);
		return 0;
	}
	console_port(c, (u16)addr);
	if (t[52] & 2) {
		c->isa_irq = -1;
		c->gsi = *(u32 *)(t + 54);
	} else if (t[52] & 1) {
		c->isa_irq = t[53];
	}
	c->baud = t[58] < 8 ? rates[t[58]] : 115200;
	c->by = "SPCR";
	return 1;
}

void acpi_poweroff(void)
{
	__asm__ volatile("cli");
	serial_sync();
	if (pm1a_cnt && have_s5) {
		/* SLP_TYPx in bits 12:10, SLP_EN bit 13 (ACPI 4.8.3.2.1). */
		outw(pm1a_cnt, (slp_typa << 10) | (1 << 13));
		if (pm1b_cnt)
			outw(pm1b_cnt, (slp_typb << 10) | (1 << 13));
		/* The machine goes off a moment after the write, not at it. */
		for (u64 t = now_ns(); now_ns() - t < 1000000000UL;)
			;
	}
	kprintf("metal: power-off failed; halted\n");
	for (;;)
		__asm__ volatile("hlt");
}

void acpi_reset(void)
{
	__asm__ volatile("cli");
	serial_sync();
	if (reset_addr && reset_space == 1)
		outb((u16)reset_addr, reset_val);
	else if (reset_addr && reset_space == 0)
		*(volatile u8 *)reset_addr = reset_val;
	outb(0xcf9, 0x06); /* the chipset's reset control register: full reset */
	outb(0x64, 0xfe);  /* the keyboard controller's reset line */
	kprintf("metal: reset failed; halted\n");
	for (;;)
		__asm__ volatile("hlt");
}
