/*
 * trap.c: the IDT, and where every entry from entry.S goes.
 */
#include "shim.h"

struct cpu cpu0;
struct stats stats;

void stats_print(void)
{
	u64 up = now_ns();
	kprintf("metal: up %lu ms, idle %lu ms: %lu system calls (%lu clock_gettime), %lu timer and %lu device interrupts, %lu page faults, %lu thread switches\n",
		up / 1000000, stats.idle_ns / 1000000, stats.syscalls, stats.clock_gettime, stats.timer_irqs, stats.device_irqs, stats.page_faults, stats.switches);
}
extern char isr_stubs[], syscall_entry[];
extern u64 gdt[];

/* The 64-bit TSS (SDM 8.7): only the IST pointers matter in ring 0. */
static struct __attribute__((packed)) {
	u32 reserved0;
	u64 rsp[3];
	u64 reserved1;
	u64 ist[7];
	u64 reserved2;
	u16 reserved3, iomap;
} tss;
static u8 ist1[16384] __attribute__((aligned(16)));
static u8 ist2[8192] __attribute__((aligned(16)));

/* IDT gate descriptors (SDM 6.14.1): 64-bit interrupt gates (type 0xE),
 * present, DPL 0, so IF is clear in the handler. */
static struct __attribute__((packed)) gate {
	u16 off0, sel;
	u8 ist, type;
	u16 off1;
	u32 off2, zero;
} idt[256];

void trap_init(void)
{
	tss.ist[0] = (u64)ist1 + sizeof ist1;
	tss.ist[1] = (u64)ist2 + sizeof ist2;
	tss.iomap = sizeof tss;
	u64 base = (u64)&tss, limit = sizeof tss - 1;
	/* The TSS descriptor (SDM 8.2.3): type 9, available 64-bit TSS. */
	gdt[TSSSEL / 8] = (limit & 0xffff) | (base & 0xffffff) << 16 | 0x89UL << 40 |
			  ((limit >> 16) & 0xf) << 48 | ((base >> 24) & 0xff) << 56;
	gdt[TSSSEL / 8 + 1] = base >> 32;
	__asm__ volatile("ltr %w0" ::"r"(TSSSEL));

	for (int v = 0; v < 256; v++) {
		u64 h = (u64)isr_stubs + 16 * v;
		idt[v].off0 = (u16)h;
		idt[v].sel = KCODE;
		/* NMI, #DF and #MC on their own stack: they may hit while IST1 is in use. */
		idt[v].ist = (v == 2 || v == 8 || v == 18) ? 2 : 1;
		idt[v].type = 0x8e;
		idt[v].off1 = (u16)(h >> 16);
		idt[v].off2 = (u32)(h >> 32);
		idt[v].zero = 0;
	}
	struct __attribute__((packed)) { u16 limit; u64 base; } idtr = {sizeof idt - 1, (u64)idt};
	__asm__ volatile("lidt %0" ::"m"(idtr));

	/* GS base: the per-CPU data entry.S reaches as %gs:N (Go never uses GS). */
	wrmsr(0xc0000101, (u64)&cpu0);
	/* The shim's own code runs until the first thread is entered (resume
	 * clears this): a fault before then is fatal and printed, not taken
	 * for Go's and sent to a kernel stack no thread has yet. */
	cpu0.in_kernel = 1;
	/*
	 * SYSCALL (SDM vol 2B; 5.8.8): STAR[47:32] is the CS it loads (SS is
	 * that plus 8), LSTAR the entry, FMASK the RFLAGS bits it clears: IF,
	 * so the entry runs with interrupts off, and TF, DF, NT, AC.
	 */
	wrmsr(0xc0000081, (u64)KCODE << 32);
	wrmsr(0xc0000082, (u64)syscall_entry);
	wrmsr(0xc0000084, 0x200 | 0x100 | 0x400 | 0x4000 | 0x40000);
}

void dump_regs(struct regs *r)
{
	u64 cr0, cr3, cr4;
	__asm__ volatile("mov %%cr0, %0; mov %%cr3, %1; mov %%cr4, %2" : "=r"(cr0), "=r"(cr3), "=r"(cr4));
	struct thread *t = cpu0.cur;
	kprintf("metal: vector %lu error %lx thread %d\n", r->vector, r->err, t ? t->tid : -1);
	kprintf("  rip %p  cs %lx  rflags %lx  rsp %p  ss %lx\n", r->rip, r->cs, r->rflags, r->rsp, r->ss);
	kprintf("  rax %p  rbx %p  rcx %p  rdx %p\n", r->rax, r->rbx, r->rcx, r->rdx);
	kprintf("  rsi %p  rdi %p  rbp %p  r8  %p\n", r->rsi, r->rdi, r->rbp, r->r8);
	kprintf("  r9  %p  r10 %p  r11 %p  r12 %p\n", r->r9, r->r10, r->r11, r->r12);
	kprintf("  r13 %p  r14 %p  r15 %p\n", r->r13, r->r14, r->r15);
	kprintf("  cr0 %p  cr2 %p  cr3 %p  cr4 %p\n", cr0, read_cr2(), cr3, cr4);
	kprintf("  fs.base %p  gs.base %p\n", rdmsr(0xc0000100), rdmsr(0xc0000101));
}

static int dying;

void fatal(struct regs *r, const char *why)
{
	if (dying++) {
		for (;;)
			__asm__ volatile("cli; hlt");
	}
	serial_sync();
	kprintf("metal: %s\n", why);
	dump_regs(r);
	acpi_poweroff();
}

/* trap_fatal: from entry.S's fatal path (NMI, #DF, #MC, a fault in the shim). */
void trap_fatal(struct regs *r)
{
	static const char *const names[32] = {
		"#DE divide error", "#DB debug", "NMI", "#BP breakpoint", "#OF overflow", "#BR bound",
		"#UD invalid opcode", "#NM no FPU", "#DF double fault", "coprocessor overrun",
		"#TS invalid TSS", "#NP segment not present", "#SS stack fault", "#GP general protection",
		"#PF page fault", "reserved", "#MF x87 error", "#AC alignment check", "#MC machine check",
		"#XM SIMD error", "#VE virtualization", "#CP control protection",
	};
	const char *n = r->vector < 32 && names[r->vector] ? names[r->vector] : "interrupt";
	kprintf("metal: %s %s\n", n, cpu0.in_kernel ? "in the shim" : "");
	fatal(r, "fatal trap");
}

struct regs *trap(struct regs *r)
{
	struct thread *t = cpu0.cur;
	u64 v = r->vector;
	if (v == VEC_SYSCALL) {
		stats.syscalls++;
		do_syscall(t, r);
	} else if (v == VEC_TIMER) {
		stats.timer_irqs++;
		timer_fired();
		lapic_eoi();
		need_resched();
	} else if (v == VEC_CONSOLE) {
		lapic_eoi();
		console_input();
	} else if (v == VEC_SPURIOUS || (v >= 32 && v < 48)) {
		/* the LAPIC's spurious vector needs no EOI; the PICs are masked */
	} else if (v >= 32) {
		lapic_eoi();
		if (!irq_device(v))
			kprintf("metal: unexpected interrupt %lu\n", v);
	} else if (r->cs != KCODE || t->tid == 0) {
		trap_fatal(r); /* an exception in the idle loop is the shim's */
	} else if (v == 14) {
		u64 addr = read_cr2();
		stats.page_faults++;
		int code = page_fault(addr, r->err);
		if (code)
			signal_fault(t, r, SIGSEGV, code, addr);
	} else {
		/* As Linux maps exceptions to signals (arch/x86/kernel/traps.c). */
		switch (v) {
		case 0: signal_fault(t, r, SIGFPE, 1, r->rip); break;   /* FPE_INTDIV */
		case 1: case 3: signal_fault(t, r, SIGTRAP, 0x80, 0); break;
		case 6: signal_fault(t, r, SIGILL, 2, r->rip); break;   /* ILL_ILLOPN */
		case 12: case 13: signal_fault(t, r, SIGSEGV, 0x80, 0); break; /* SI_KERNEL */
		case 16: case 19: signal_fault(t, r, SIGFPE, 0, r->rip); break;
		case 17: signal_fault(t, r, 7 /* SIGBUS */, 1, 0); break;
		default: trap_fatal(r);
		}
	}
	return schedule();
}
