/*
 * time.c: the clocks and the one timer.
 *
 * The TSC is the clock (nanoseconds since boot, scaled by a factor
 * measured against a reference counter: the ACPI PM timer, or the HPET
 * where there is none): over 1 ms at boot, then again over the first
 * second (time_refine), as Linux refines its quick boot calibration. The LAPIC
 * timer in one-shot mode (SDM 11.5.4) is the only interrupt source: it
 * is armed for the earliest thing due (a sleeping thread, a futex or
 * epoll timeout, the end of a time slice) and not at all when nothing
 * is, so an idle machine halts until then.
 * Wall time comes from the CMOS RTC, read once.
 *
 * The LAPIC runs in xAPIC mode, a page of registers at 0xfee00000, or
 * in x2APIC mode (SDM 11.12), where the same registers are the MSRs
 * 0x800 + offset/16 and the page decodes nothing. Firmware on many
 * servers hands over in x2APIC mode, which is left only by disabling
 * the LAPIC (SDM 11.12.5), so the shim keeps the mode it finds;
 * metal.x2apic on the command line asks for x2APIC where firmware left
 * xAPIC.
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

/*
 * Read by the vDSO's clock_gettime too (vdso.S): ns = ns_base +
 * (TSC - tsc0) * ns_per_tsc. Set at boot and once more by time_refine,
 * which bumps clock_seq around the change: the shim runs with interrupts
 * off, but the vDSO can be interrupted between its loads, and reads
 * again when clock_seq moved meanwhile.
 */
u64 tsc0;
u64 ns_base;
u64 ns_per_tsc;  /* 32.32 fixed point */
u64 wall_offset; /* Unix time in ns at the clock's zero */
u64 clock_seq;
static u64 lapic_per_ns; /* LAPIC timer ticks per ns, 32.32 fixed point */

/*
 * The reference the TSC and the LAPIC timer are measured against: the
 * ACPI PM timer (a 3.579545 MHz counter of 24 or 32 bits, ACPI 4.8.3.3)
 * where the FADT names one that counts, else the HPET's main counter
 * (IA-PC HPET 1.0a, 2.3.4: its period in femtoseconds in GCAP_ID 63:32,
 * read here 32 bits wide). Firmware for recent Intel boards may turn
 * the PM timer off to save power and keeps the HPET; metal.clock=hpet
 * asks for the HPET where both are. A reading is ref_ns's ticks: ns =
 * ticks * ref_num / ref_den.
 *
 * Measuring over 10 ms held up every boot by 10 ms; over 1 ms, with each
 * TSC read between two reference reads (ref_tsc), the rate comes within
 * 0.01% of what the same start read again a second later gives, before
 * the reference wraps (a 24-bit PM timer: 4.69 s).
 */
#define PM_TIMER_HZ 3579545UL
#define HPET_GCAP_ID 0x000
#define HPET_GEN_CONF 0x010 /* bit 0: ENABLE_CNF, the main counter runs */
#define HPET_MAIN_CNT 0x0f0
#define HPET_MAX_PERIOD_FS 100000000UL /* 2.3.4: at most 100 ns a tick */

int hpet_wanted; /* metal.clock=hpet */
static const char *ref_name;
static u32 pm_port;
static u64 hpet; /* the HPET's registers when it is the reference */
static u32 ref_mask, ref_start;
static u64 ref_num, ref_den;
static u64 tsc_start;
static int refined;
#define REFINE_NS 1000000000UL
#define REFINE_LATEST_NS 4000000000UL

static u32 ref_read(void) { return hpet ? *mmio32(hpet + HPET_MAIN_CNT) : inl(pm_port) & ref_mask; }

static u64 ref_ns(u32 ticks) { return (u64)ticks * ref_num / ref_den; }

/* counts says whether the reference moves: a PM timer firmware turned
 * off still answers, with a value that never changes. A running one
 * moves within a few reads (a tick is 279 ns, an HPET's at most 100). */
static int counts(void)
{
	u32 v = ref_read();
	for (int i = 0; i < 100000; i++)
		if (ref_read() != v)
			return 1;
	return 0;
}

/* ref_init picks the reference as the top of this file says, or panics
 * naming what is missing. */
static void ref_init(void)
{
	pm_port = acpi_pm_timer_port();
	if (pm_port && !hpet_wanted) {
		ref_name = "the PM timer";
		ref_mask = acpi_pm_timer_32bit() ? 0xffffffffU : 0xffffffU;
		ref_num = 1000000000UL, ref_den = PM_TIMER_HZ;
		if (counts())
			return;
		kprintf("metal: the PM timer at port %x does not count\n", pm_port);
	}
	u64 base = acpi_hpet_base();
	if (base) {
		u64 period = *(volatile u64 *)(base + HPET_GCAP_ID) >> 32;
		if (period && period <= HPET_MAX_PERIOD_FS) {
			*mmio32(base + HPET_GEN_CONF) |= 1;
			hpet = base;
			ref_name = "the HPET";
			ref_mask = 0xffffffffU;
			ref_num = period, ref_den = 1000000UL;
			if (counts())
				return;
		}
		kprintf("metal: the HPET at %lx does not count (period %lu fs)\n", base, period);
		hpet = 0;
	}
	panic("no ACPI PM timer or HPET that counts, to measure the TSC against%s",
		hpet_wanted ? " (metal.clock=hpet)" : "");
}

#define LAPIC_ID 0x020
#define IA32_APIC_BASE 0x1b
#define APIC_BASE_EXTD (1UL << 10) /* x2APIC mode */
#define APIC_BASE_EN (1UL << 11)
#define X2APIC_MSR(reg) (0x800 + ((reg) >> 4))

int x2apic_wanted; /* metal.x2apic */
static int x2apic;

static u32 lapic_read(u32 reg)
{
	return x2apic ? (u32)rdmsr(X2APIC_MSR(reg)) : *mmio32(LAPIC_BASE + reg);
}

static void lapic_write(u32 reg, u32 v)
{
	if (x2apic)
		wrmsr(X2APIC_MSR(reg), v);
	else
		*mmio32(LAPIC_BASE + reg) = v;
}

void lapic_eoi(void) { lapic_write(LAPIC_EOI, 0); }

/* lapic_id is this CPU's APIC id: bits 31:24 of the ID register in xAPIC
 * mode (SDM 11.4.6), all 32 bits in x2APIC mode (11.12.5.1). */
u32 lapic_id(void) { return x2apic ? lapic_read(LAPIC_ID) : lapic_read(LAPIC_ID) >> 24; }

int lapic_x2apic(void) { return x2apic; }

/*
 * lapic_mode enables the LAPIC in the mode described above and says
 * why it is in it. Interrupt messages in compatibility format, which
 * the Go side hands devices and the I/O APIC, name a processor in 8
 * bits, so an id above 255 is refused here rather than left deaf.
 */
static const char *lapic_mode(void)
{
	u64 base = rdmsr(IA32_APIC_BASE);
	const char *why = "xAPIC";
	if (base & APIC_BASE_EXTD) {
		x2apic = 1;
		why = "x2APIC, as firmware left it";
	} else if (x2apic_wanted) {
		u32 c[4];
		cpuid(1, 0, c);
		if (!(c[2] & (1U << 21)))
			panic("metal.x2apic: this CPU has no x2APIC (CPUID.01H:ECX bit 21)");
		wrmsr(IA32_APIC_BASE, base | APIC_BASE_EN | APIC_BASE_EXTD);
		x2apic = 1;
		why = "x2APIC, by metal.x2apic";
	} else {
		if ((base & ~0xfffUL) != LAPIC_BASE)
			panic("the LAPIC is at %lx, not %lx", base & ~0xfffUL, LAPIC_BASE);
		wrmsr(IA32_APIC_BASE, base | APIC_BASE_EN);
	}
	if (lapic_id() > 255)
		panic("this CPU's APIC id %u is above 255, which compatibility-format interrupt messages cannot name", lapic_id());
	return why;
}

u64 now_ns(void)
{
	return ns_base + (u64)(((unsigned __int128)(rdtsc() - tsc0) * ns_per_tsc) >> 32);
}

/*
 * ref_tsc reads the TSC and the LAPIC timer's count between two reads of
 * the reference and returns the TSC, with the reference's reading they
 * were taken at (the two reads' middle) and the count, from the tightest
 * of eight tries: a host that preempts QEMU between one read and the
 * other (microseconds, now and then a millisecond) would otherwise count
 * that time on one clock and not the other.
 */
static u64 ref_tsc(u32 *ref, u32 *lapic_count)
{
	u64 best_t = 0;
	u32 best_w = ~0U;
	for (int i = 0; i < 8; i++) {
		u32 a = ref_read();
		u64 t = rdtsc();
		u32 l = lapic_read(LAPIC_TIMER_CUR);
		u32 w = (ref_read() - a) & ref_mask;
		if (w < best_w) {
			best_w = w;
			best_t = t;
			*ref = (a + w / 2) & ref_mask;
			*lapic_count = l;
		}
	}
	return best_t;
}

/*
 * time_refine measures the TSC's rate again over everything since the
 * calibration began, once, the first time it is called a second or more
 * after boot (the scheduler calls it). The clock goes on from the value
 * it has now at the new rate, so it neither jumps nor goes back.
 */
void time_refine(u64 now)
{
	if (refined || now < REFINE_NS)
		return;
	refined = 1;
	if (now > REFINE_LATEST_NS)
		return; /* the reference may have wrapped: the boot rate stays */
	u32 p, l;
	u64 t = ref_tsc(&p, &l);
	u64 ns = ref_ns((p - ref_start) & ref_mask);
	if (t <= tsc_start || !ns)
		return;
	u64 cur = now_ns(), boot = ns_per_tsc;
	clock_seq++;
	ns_base = cur;
	tsc0 = t;
	ns_per_tsc = (ns << 32) / (t - tsc_start);
	clock_seq++;
	kprintf("metal: TSC %lu kHz over %lu ms (%lu kHz over 1 ms at boot)\n",
		(t - tsc_start) * 1000000 / ns, ns / 1000000, (1000000UL << 32) / boot);
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
	 * The LAPIC (SDM 11.4.1): software enable and the spurious vector in
	 * the SVR (SDM 11.9), LINT0 masked (the PICs' virtual wire), LINT1
	 * left as NMI, errors masked.
	 */
	const char *mode = lapic_mode();
	lapic_write(LAPIC_SVR, 0x100 | VEC_SPURIOUS);
	lapic_write(LAPIC_LVT_LINT0, 1 << 16);
	lapic_write(LAPIC_LVT_ERROR, 1 << 16);
	lapic_write(LAPIC_TIMER_DIV, 0x3);                   /* divide by 16 */
	lapic_write(LAPIC_LVT_TIMER, (1 << 16) | VEC_TIMER); /* masked, one-shot */

	/*
	 * Measure the TSC and the LAPIC timer against the reference over
	 * 1 ms (time_refine measures the TSC again later).
	 */
	ref_init();
	u32 ms_ticks = (u32)(1000000UL * ref_den / ref_num);
	lapic_write(LAPIC_TIMER_INIT, 0xffffffff);
	u32 p0, p1, l0, l1;
	u64 t0 = ref_tsc(&p0, &l0), t1;
	do
		t1 = ref_tsc(&p1, &l1);
	while (((p1 - p0) & ref_mask) < ms_ticks);
	lapic_write(LAPIC_TIMER_INIT, 0);
	u64 ns = ref_ns((p1 - p0) & ref_mask);
	if (t1 <= t0 || l0 <= l1)
		panic("the TSC or the LAPIC timer does not count");
	ns_per_tsc = (ns << 32) / (t1 - t0);
	lapic_per_ns = ((u64)(l0 - l1) << 32) / ns;
	tsc0 = t0;
	ref_start = p0;
	tsc_start = t0;
	wall_offset = rtc_unix() * 1000000000UL;
	kprintf("metal: TSC %lu kHz, LAPIC timer %lu kHz, against %s; LAPIC %u in %s\n",
		(t1 - t0) * 1000000 / ns, (u64)(l0 - l1) * 1000000 / ns, ref_name, lapic_id(), mode);
}

/*
 * timer_arm sets the one-shot LAPIC timer to fire at deadline (ns since
 * boot); 0 stops it. The scheduler asks after every system call, fault
 * and interrupt, and the deadline seldom moves (while another thread
 * waits for the CPU, once a millisecond: each call starts the slice
 * again, its end rounded up), so a deadline already armed is left alone: under QEMU TCG each write of
 * the LAPIC's timer costs microseconds of the host's timer work, and
 * rewriting it every time took 5% of a boot's samples. timer_fired
 * forgets the deadline once the timer has gone off, early or on time.
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
		lapic_write(LAPIC_TIMER_INIT, 0);
		return;
	}
	u64 now = now_ns();
	u64 ticks = deadline > now ? (u64)(((unsigned __int128)(deadline - now) * lapic_per_ns) >> 32) : 1;
	if (ticks == 0)
		ticks = 1;
	if (ticks > 0xffffffffUL)
		ticks = 0xffffffffUL; /* fires early; the scheduler re-arms */
	lapic_write(LAPIC_LVT_TIMER, VEC_TIMER); /* unmasked, one-shot */
	lapic_write(LAPIC_TIMER_INIT, (u32)ticks);
}

/* timer_dump prints the LAPIC timer and the vectors pending (IRR) or in
 * service (ISR), for debug_dump (SDM 11.8.4: eight 32-bit registers
 * each, 16 bytes apart). */
void timer_dump(void)
{
	kprintf("metal:   lapic timer lvt %x init %u current %u\n", lapic_read(LAPIC_LVT_TIMER),
		lapic_read(LAPIC_TIMER_INIT), lapic_read(LAPIC_TIMER_CUR));
	for (int i = 0; i < 8; i++) {
		u32 irr = lapic_read(0x200 + 16 * i), isr = lapic_read(0x100 + 16 * i);
		if (irr || isr)
			kprintf("metal:   vectors %u-%u: irr %x isr %x\n", 32 * i, 32 * i + 31, irr, isr);
	}
}
