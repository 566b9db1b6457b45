/*
 * time.c: the clocks and the one timer.
 *
 * The TSC is the clock (nanoseconds since boot, scaled by a factor
 * measured against the ACPI PM timer, a 3.579545 MHz counter, ACPI
 * 4.8.3.3). The LAPIC timer in one-shot mode (SDM 11.5.4) is the only
 * interrupt source: it is armed for the earliest thing due (a sleeping
 * thread, a futex or epoll timeout, the end of a time slice) and not at
 * all when nothing is, so an idle machine halts until then.
 * Wall time comes from the CMOS RTC, read once.
 */
#include "shim.h"

#define LAPIC_BASE 0xfee00000UL
#define LAPIC_EOI 0x0b0
#define LAPIC_SVR 0x0f0
#define LAPIC_LVT_TIMER 0x320
#define LAPIC_LVT_LINT0 0x350
#define LAPIC_LVT_LINT1 0x360
#define LAPIC_LVT_ERROR 0x370
#define LAPIC_TIMER_INIT 0x380
#define LAPIC_TIMER_CUR 0x390
#define LAPIC_TIMER_DIV 0x3e0
#define PM_TIMER_HZ 3579545UL

/* Read by the vDSO's clock_gettime too (vdso.S): set once, at boot. */
u64 tsc0;
u64 ns_per_tsc;          /* 32.32 fixed point */
u64 wall_offset;         /* Unix time in ns at tsc0 */
static u64 lapic_per_ns; /* LAPIC timer ticks per ns, 32.32 fixed point */

static volatile u32 *lapic(u32 reg) { return mmio32(LAPIC_BASE + reg); }

void lapic_eoi(void) { *lapic(LAPIC_EOI) = 0; }

/* lapic_id is this CPU's xAPIC ID, bits 31:24 of the ID register (SDM 11.4.6). */
u32 lapic_id(void) { return *lapic(0x020) >> 24; }

u64 now_ns(void)
{
	return (u64)(((unsigned __int128)(rdtsc() - tsc0) * ns_per_tsc) >> 32);
}

u64 tsc_ns(u64 ticks) { return (u64)(((unsigned __int128)ticks * ns_per_tsc) >> 32); }

u64 realtime_offset_ns(void) { return wall_offset; }

/* The CMOS RTC (MC146818): registers 0 sec, 2 min, 4 hour, 7 day,
 * 8 month, 9 year, 0x32 century; status A bit 7 = update in progress,
 * status B bit 2 = binary (else BCD), bit 1 = 24-hour. */
static u8 cmos(u8 reg)
{
	outb(0x70, reg);
	return inb(0x71);
}

static u64 rtc_unix(void)
{
	for (int i = 0; i < 1000000 && (cmos(0x0a) & 0x80); i++)
		;
	u8 b = cmos(0x0b);
	u32 v[7] = {cmos(0), cmos(2), cmos(4), cmos(7), cmos(8), cmos(9), cmos(0x32)};
	int pm = !(b & 2) && (v[2] & 0x80);
	v[2] &= 0x7f;
	if (!(b & 4))
		for (int i = 0; i < 7; i++)
			v[i] = (v[i] & 15) + (v[i] >> 4) * 10;
	if (pm)
		v[2] = (v[2] % 12) + 12;
	u64 year = (v[6] ? v[6] : 20) * 100 + v[5];
	u64 m = v[4], d = v[3];
	/* Days since 1970-01-01 of a civil date (the March-based era count). */
	u64 y = m <= 2 ? year - 1 : year;
	u64 era = y / 400, yoe = y - era * 400;
	u64 doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	u64 doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	u64 days = era * 146097 + doe - 719468;
	return days * 86400 + v[2] * 3600 + v[1] * 60 + v[0];
}

void time_init(void)
{
	/*
	 * The 8259 PICs: remap them to vectors 32-47 (so a stray interrupt
	 * cannot look like an exception) and mask every line; the LAPIC is
	 * the only interrupt controller in use.
	 */
	outb(0x20, 0x11); outb(0xa0, 0x11); /* ICW1: init, ICW4 follows */
	outb(0x21, 0x20); outb(0xa1, 0x28); /* ICW2: vector bases */
	outb(0x21, 0x04); outb(0xa1, 0x02); /* ICW3: cascade on IRQ2 */
	outb(0x21, 0x01); outb(0xa1, 0x01); /* ICW4: 8086 mode */
	outb(0x21, 0xff); outb(0xa1, 0xff);

	/*
	 * The LAPIC at its reset address (SDM 11.4.1): software enable and
	 * the spurious vector in the SVR (SDM 11.9), LINT0 masked (the PICs'
	 * virtual wire), LINT1 left as NMI, errors masked.
	 */
	u64 apic_base = rdmsr(0x1b);
	if ((apic_base & ~0xfffUL) != LAPIC_BASE)
		panic("the LAPIC is at %lx, not %lx", apic_base & ~0xfffUL, LAPIC_BASE);
	wrmsr(0x1b, apic_base | (1 << 11)); /* IA32_APIC_BASE.EN */
	*lapic(LAPIC_SVR) = 0x100 | VEC_SPURIOUS;
	*lapic(LAPIC_LVT_LINT0) = 1 << 16;
	*lapic(LAPIC_LVT_ERROR) = 1 << 16;
	*lapic(LAPIC_TIMER_DIV) = 0x3;                   /* divide by 16 */
	*lapic(LAPIC_LVT_TIMER) = (1 << 16) | VEC_TIMER; /* masked, one-shot */

	/*
	 * Measure the TSC and the LAPIC timer against the PM timer over
	 * 10 ms. The PM timer is 24 bits wide unless the FADT says 32.
	 */
	u32 port = acpi_pm_timer_port();
	if (!port)
		panic("no ACPI PM timer to measure the TSC against");
	u32 mask = acpi_pm_timer_32bit() ? 0xffffffffU : 0xffffffU;
	u32 want = PM_TIMER_HZ / 100;
	*lapic(LAPIC_TIMER_INIT) = 0xffffffff;
	u32 p0 = inl(port) & mask;
	u32 l0 = *lapic(LAPIC_TIMER_CUR);
	u64 t0 = rdtsc();
	u32 p1;
	do
		p1 = inl(port) & mask;
	while (((p1 - p0) & mask) < want);
	u64 t1 = rdtsc();
	u32 l1 = *lapic(LAPIC_TIMER_CUR);
	*lapic(LAPIC_TIMER_INIT) = 0;
	u64 ns = ((u64)((p1 - p0) & mask) * 1000000000UL) / PM_TIMER_HZ;
	if (t1 <= t0 || l0 <= l1)
		panic("the TSC or the LAPIC timer does not count");
	ns_per_tsc = (ns << 32) / (t1 - t0);
	lapic_per_ns = ((u64)(l0 - l1) << 32) / ns;
	tsc0 = t0;
	wall_offset = rtc_unix() * 1000000000UL;
	kprintf("metal: TSC %lu kHz, LAPIC timer %lu kHz\n",
		(t1 - t0) * 1000000 / ns, (u64)(l0 - l1) * 1000000 / ns);
}

/*
 * timer_arm sets the one-shot LAPIC timer to fire at deadline (ns since
 * boot); 0 stops it. The scheduler asks after every system call, fault
 * and interrupt, and the deadline seldom moves, so a deadline already
 * armed is left alone: under QEMU TCG each write of the LAPIC's timer
 * costs microseconds of the host's timer work, and rewriting it every
 * time took 5% of a boot's samples. timer_fired forgets the deadline
 * once the timer has gone off, early or on time.
 */
static u64 armed; /* the deadline the timer is set for; 0: stopped */

void timer_fired(void) { armed = 0; }

void timer_arm(u64 deadline)
{
	if (deadline == armed)
		return;
	armed = deadline;
	stats.timer_writes++;
	if (!deadline) {
		*lapic(LAPIC_TIMER_INIT) = 0;
		return;
	}
	u64 now = now_ns();
	u64 ticks = deadline > now ? (u64)(((unsigned __int128)(deadline - now) * lapic_per_ns) >> 32) : 1;
	if (ticks == 0)
		ticks = 1;
	if (ticks > 0xffffffffUL)
		ticks = 0xffffffffUL; /* fires early; the scheduler re-arms */
	*lapic(LAPIC_LVT_TIMER) = VEC_TIMER; /* unmasked, one-shot */
	*lapic(LAPIC_TIMER_INIT) = (u32)ticks;
}

/* timer_dump prints the LAPIC timer and the vectors pending (IRR) or in
 * service (ISR), for debug_dump (SDM 11.8.4: eight 32-bit registers
 * each, 16 bytes apart). */
void timer_dump(void)
{
	kprintf("metal:   lapic timer lvt %x init %u current %u\n", *lapic(LAPIC_LVT_TIMER),
		*lapic(LAPIC_TIMER_INIT), *lapic(LAPIC_TIMER_CUR));
	for (int i = 0; i < 8; i++) {
		u32 irr = *lapic(0x200 + 16 * i), isr = *lapic(0x100 + 16 * i);
		if (irr || isr)
			kprintf("metal:   vectors %u-%u: irr %x isr %x\n", 32 * i, 32 * i + 31, irr, isr);
	}
}
