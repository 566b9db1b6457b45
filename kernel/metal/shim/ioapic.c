/*
 * ioapic.c: COM1's interrupt through the I/O APIC (82093AA datasheet,
 * 3.2), so a console reader sleeps until a key arrives instead of the
 * UART being polled. ISA IRQ 4 is global system interrupt 4 unless the
 * MADT says otherwise (an Interrupt Source Override, ACPI 5.2.12.5).
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
	if (ver == 0xffffffff || max < 4) {
		kprintf("metal: no I/O APIC at %lx: console input is polled\n", IOAPIC_BASE);
		return;
	}
	u32 gsi = acpi_isa_gsi(4);
	/* Every other line masked (bit 16): a loader or firmware may have
	 * left one routed (the PIT's, a disk's) that nothing here expects. */
	for (u32 i = 0; i <= max; i++)
		if (i != gsi)
			ioapic_write(IOREDTBL(i), 1 << 16);
	/* Edge-triggered, active high, fixed delivery, physical destination
	 * this LAPIC (bits 63:56). */
	ioapic_write(IOREDTBL(gsi) + 1, lapic_id() << 24);
	ioapic_write(IOREDTBL(gsi), VEC_COM1);
	serial_irq_on();
	console_gsi = gsi;
	console_irq = 1;
}

/* ioapic_console_line says how COM1's interrupt leaves the I/O APIC:
 * its id (bits 27:24 of IOAPICID, what the DMAR names it by) in bits
 * 47:40, the line in 39:32, the destination LAPIC in 15:8 and the vector
 * in 7:0. Negative when input is polled. */
i64 ioapic_console_line(void)
{
	if (!console_irq)
		return -ENODEV;
	u64 id = (ioapic_read(0x00) >> 24) & 0xf;
	return (i64)(id << 40 | (u64)console_gsi << 32 | (u64)(lapic_id() & 0xff) << 8 | VEC_COM1);
}

/* ioapic_console_remap rewrites COM1's redirection entry in remappable
 * format (VT-d 5.1.5.1): bit 48 set, the interrupt remapping entry's
 * index in bits 63:49 and, bit 15 of it, in bit 11; the vector stays in
 * 7:0. Masked while the two halves change. */
i64 ioapic_console_remap(u64 entry)
{
	if (!console_irq)
		return -ENODEV;
	if (entry > 0xffff)
		return -EINVAL;
	ioapic_write(IOREDTBL(console_gsi), 1 << 16 | VEC_COM1);
	ioapic_write(IOREDTBL(console_gsi) + 1, (u32)((entry & 0x7fff) << 17 | 1 << 16));
	ioapic_write(IOREDTBL(console_gsi), (u32)((entry >> 15) << 11 | VEC_COM1));
	return 0;
}
