/*
 * ioapic.c: the console UART's interrupt through the I/O APIC (82093AA
 * datasheet, 3.2), so a console reader sleeps until a key arrives instead
 * of the UART being polled. ISA IRQ n is global system interrupt n unless
 * the MADT says otherwise (an Interrupt Source Override, ACPI 5.2.12.5).
 */
#include "shim.h"

int console_irq;
static u32 console_gsi;

#define IOAPIC_BASE 0xfec00000UL
#define IOREGSEL 0x00
#define IOWIN 0x10
#define IOREDTBL(n) (0x10 + 2 * (n))

static void ioapic_write(u32 reg, u32 v)
{
	*mmio32(IOAPIC_BASE + IOREGSEL) = reg;
	*mmio32(IOAPIC_BASE + IOWIN) = v;
}

static u32 ioapic_read(u32 reg)
{
	*mmio32(IOAPIC_BASE + IOREGSEL) = reg;
	return *mmio32(IOAPIC_BASE + IOWIN);
}

void ioapic_init(void)
{
	u32 ver = ioapic_read(0x01);
	u32 max = (ver >> 16) & 0xff; /* highest redirection entry */
	if (ver == 0xffffffff) {
		kprintf("metal: no I/O APIC at %lx: console input is polled\n", IOAPIC_BASE);
		return;
	}
	/* The console's line: the GSI firmware named, else its ISA IRQ's. */
	i64 gsi = console.gsi;
	if (gsi < 0 && console.isa_irq >= 0)
		gsi = acpi_isa_gsi((u32)console.isa_irq);
	if (!serial_up())
		gsi = -1; /* no UART: no line, and no one to tell */
	else if (gsi < 0)
		kprintf("metal: %s at I/O 0x%x has no interrupt known: console input is polled\n", console.name, console.port);
	else if (gsi > max)
		kprintf("metal: %s's interrupt, GSI %lu, is past the I/O APIC's %u lines: console input is polled\n",
			console.name, gsi, max + 1);
	/* Every other line masked (bit 16): a loader or firmware may have
	 * left one routed (the PIT's, a disk's) that nothing here expects. */
	for (u32 i = 0; i <= max; i++)
		if (i != gsi)
			ioapic_write(IOREDTBL(i), 1 << 16);
	if (gsi < 0 || gsi > max)
		return;
	/* Edge-triggered, active high, as a PC's serial ports are; fixed
	 * delivery, physical destination this LAPIC (bits 63:56). */
	ioapic_write(IOREDTBL(gsi) + 1, lapic_id() << 24);
	ioapic_write(IOREDTBL(gsi), VEC_CONSOLE);
	serial_irq_on();
	console_gsi = (u32)gsi;
	console_irq = 1;
}

/* ioapic_console_line says how the console's interrupt leaves the I/O APIC:
 * its id (bits 27:24 of IOAPICID, what the DMAR names it by) in bits
 * 47:40, the line in 39:32, the destination LAPIC in 15:8 and the vector
 * in 7:0. Negative when input is polled. */
i64 ioapic_console_line(void)
{
	if (!console_irq)
		return -ENODEV;
	u64 id = (ioapic_read(0x00) >> 24) & 0xf;
	return (i64)(id << 40 | (u64)console_gsi << 32 | (u64)(lapic_id() & 0xff) << 8 | VEC_CONSOLE);
}

/* ioapic_console_remap rewrites the console's redirection entry in remappable
 * format (VT-d 5.1.5.1): bit 48 set, the interrupt remapping entry's
 * index in bits 63:49 and, bit 15 of it, in bit 11; the vector stays in
 * 7:0. Masked while the two halves change. */
i64 ioapic_console_remap(u64 entry)
{
	if (!console_irq)
		return -ENODEV;
	if (entry > 0xffff)
		return -EINVAL;
	ioapic_write(IOREDTBL(console_gsi), 1 << 16 | VEC_CONSOLE);
	ioapic_write(IOREDTBL(console_gsi) + 1, (u32)((entry & 0x7fff) << 17 | 1 << 16));
	ioapic_write(IOREDTBL(console_gsi), (u32)((entry >> 15) << 11 | VEC_CONSOLE));
	/* An edge that came while the entry was masked is lost, and the
	 * UART holds its line up until served: serve it now. */
	serial_irq();
	return 0;
}
