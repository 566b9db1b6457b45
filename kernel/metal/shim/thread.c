/*
 * thread.c: the Go process's threads (clone), the scheduler, and the
 * waits a thread can block in (futex, nanosleep, epoll, the console).
 *
 * One CPU. A thread not running is its frame at the top of its kernel
 * stack; schedule() picks the frame trap() returns. Threads run round
 * robin: a thread keeps the CPU until it blocks, yields, wakes another,
 * or computes for 10 ms without a system call while another thread is
 * runnable. The Go runtime relies on that preemption: sysmon must run
 * while a goroutine computes, and sends it SIGURG (tgkill) to preempt it
 * asynchronously. Each system call starts the slice again, so a thread
 * that makes calls keeps the CPU from a runnable one until it blocks:
 * ending slices 10 ms after the switch instead made a metal boot 15-30
 * ms slower (sixty more timer interrupts and 130 more switches before
 * main), the thread doing the boot's work being the one that calls.
 */
#include "shim.h"

#define MAXT 128
#define KSTACK (16UL << 10)
#define SLICE_NS 10000000UL
#define SLICE_GRAIN_NS 1000000UL /* a slice's end, rounded up to it */
#define CONSOLE_POLL_NS 20000000UL

extern char idle_loop[];

static struct thread threads[MAXT];
static struct thread idle;
static struct thread *fpu_owner; /* whose state the FPU/SSE registers hold */
static int next_tid = 1;
static int resched;
static int rr;        /* where the round robin looks next */
static u64 fs_loaded; /* the FS base in the MSR */

/*
 * The FPU, SSE and AVX state. With XSAVE (CPUID.01H:ECX bit 26) and AVX
 * (bit 28) the shim turns on CR4.OSXSAVE and XCR0's x87, SSE and AVX
 * bits (SDM vol 1 13.3), so the Go runtime sees an OS that saves the
 * YMM registers and takes its AVX2 routines: under TCG they hashed
 * 16 MiB with SHA-256 in 0.28 s where the SSE ones took 1.56 s, and
 * copied 128 MiB in 0.27 s where rep movsq took 1.47 s. Each thread's
 * state is then saved with XSAVE in its standard form, else FXSAVE.
 */
static u64 xcr0; /* 0: FXSAVE only */
u64 fpu_size = 512;

void fpu_init(void)
{
	u32 c[4];
	cpuid(1, 0, c);
	if (!(c[2] & (1U << 26)) || !(c[2] & (1U << 28)))
		return;
	u32 d[4];
	cpuid(0xd, 0, d); /* EAX: the XCR0 bits supported */
	if ((d[0] & 7) != 7)
		return;
	u64 cr4;
	__asm__ volatile("mov %%cr4, %0" : "=r"(cr4));
	__asm__ volatile("mov %0, %%cr4" ::"r"(cr4 | (1UL << 18))); /* OSXSAVE */
	__asm__ volatile("xsetbv" ::"c"(0), "a"(7), "d"(0));
	cpuid(0xd, 0, d); /* EBX: the area's size for what XCR0 enables now */
	if (d[1] > FPU_AREA) {
		__asm__ volatile("xsetbv" ::"c"(0), "a"(3), "d"(0));
		__asm__ volatile("mov %0, %%cr4" ::"r"(cr4));
		return;
	}
	xcr0 = 7;
	fpu_size = d[1];
}

void fx_save(u8 *area)
{
	if (xcr0)
		__asm__ volatile("xsave64 (%0)" ::"r"(area), "a"((u32)xcr0), "d"(0) : "memory");
	else
		__asm__ volatile("fxsave64 (%0)" ::"r"(area) : "memory");
}

/* fx_restore loads a state fx_save wrote, or one a signal handler may
 * have edited: MXCSR's reserved bits (SDM vol 1 10.5.1.2) and XSAVE's
 * header (13.7: only XCR0's features, the standard form, reserved
 * bytes zero) are cleared first, so XRSTOR cannot fault in the shim. */
int fx_restore(u8 *area)
{
	if (((u64)area & (xcr0 ? 63 : 15)))
		return -1;
	u32 *mxcsr = (u32 *)(area + 24), mask = *(u32 *)(area + 28);
	*mxcsr &= mask ? mask : 0xffbf;
	if (xcr0) {
		*(u64 *)(area + 512) &= xcr0; /* XSTATE_BV */
		memset(area + 520, 0, 56);    /* XCOMP_BV and the reserved bytes */
		__asm__ volatile("xrstor64 (%0)" ::"r"(area), "a"((u32)xcr0), "d"(0) : "memory");
	} else {
		__asm__ volatile("fxrstor64 (%0)" ::"r"(area) : "memory");
	}
	return 0;
}

struct thread *threads_table(int *n)
{
	*n = MAXT;
	return threads;
}

static u64 kstack(void)
{
	u64 s = contig_alloc(KSTACK, PAGE);
	if (!s)
		panic("no memory for a kernel stack");
	return s + KSTACK;
}

void threads_init(void)
{
	/* The idle thread runs idle_loop in the shim with interrupts on. */
	idle.kstack_top = kstack();
	struct regs *f = frame_of(&idle);
	memset(f, 0, sizeof *f);
	f->rip = (u64)idle_loop;
	f->cs = KCODE;
	f->rflags = 0x202; /* IF */
	f->rsp = kstack() - 64;
	f->ss = KDATA;
	idle.state = T_RUNNABLE;
	/* The FPU's initial state (SDM vol 1 8.1.9: FNINIT; MXCSR 0x1F80,
	 * every SIMD exception masked) is every new process's. */
	fpu_init();
	__asm__ volatile("fninit");
	u32 mxcsr = 0x1f80;
	__asm__ volatile("ldmxcsr %0" ::"m"(mxcsr));
}

struct thread *thread_new(void)
{
	for (int i = 0; i < MAXT; i++) {
		struct thread *t = &threads[i];
		if (t->state != T_FREE && t->state != T_DEAD)
			continue;
		u64 top = t->kstack_top ? t->kstack_top : kstack();
		memset(t, 0, sizeof *t);
		t->kstack_top = top;
		t->tid = next_tid++;
		return t;
	}
	return NULL;
}

/* thread_start makes t the running thread: the first one, at boot. */
void thread_start(struct thread *t)
{
	fx_save(t->fx);
	fpu_owner = t;
	t->state = T_RUNNABLE;
	cpu0.cur = t;
	cpu0.kstack_top = t->kstack_top;
	wrmsr(0xc0000100, t->fs_base);
	fs_loaded = t->fs_base;
}

struct thread *thread_by_tid(int tid)
{
	for (int i = 0; i < MAXT; i++)
		if (threads[i].tid == tid && (threads[i].state == T_RUNNABLE || threads[i].state == T_BLOCKED))
			return &threads[i];
	return NULL;
}

void need_resched(void) { resched = 1; }

void block(struct thread *t, int wait, u64 deadline)
{
	t->blocked_at = now_ns();
	t->state = T_BLOCKED;
	t->wait = wait;
	t->deadline = deadline;
	resched = 1;
}

/* wake makes t runnable with rax as its call's result. The waker gives
 * up the CPU on the way out (as Linux's wakeup preemption would): the
 * woken thread is usually what the waker is waiting for, such as the M
 * that runs a timer or the netpoller after a netpollBreak. */
void wake(struct thread *t, i64 rax)
{
	frame_of(t)->rax = rax;
	t->woken_at = now_ns();
	t->wakes++;
	t->state = T_RUNNABLE;
	t->wait = W_NONE;
	t->deadline = 0;
	resched = 1;
}

/* console_poll finishes a read(0) when the UART has bytes; 0 if none. */
static int console_poll(struct thread *t)
{
	u64 buf = t->wait_addr, n = t->wait_arg, got = 0;
	int c;
	while (got < n && (c = serial_getc()) >= 0)
		*(u8 *)(buf + got++) = (u8)c;
	if (got)
		wake(t, got);
	return got != 0;
}

/* console_input: the console's interrupt, for bytes in or room out.
 * Readers blocked in read(0) take what came, and epoll waits on the
 * console see it readable. */
void console_input(void)
{
	serial_irq();
	for (int i = 0; i < MAXT; i++)
		if (threads[i].state == T_BLOCKED && threads[i].wait == W_CONSOLE)
			console_poll(&threads[i]);
	console_readable();
}

static void expire(u64 now)
{
	for (int i = 0; i < MAXT; i++) {
		struct thread *t = &threads[i];
		if (t->state != T_BLOCKED || !t->deadline || t->deadline > now)
			continue;
		switch (t->wait) {
		case W_CONSOLE:
			if (!console_poll(t))
				t->deadline = now + CONSOLE_POLL_NS;
			break;
		case W_FUTEX:
			wake(t, -ETIMEDOUT);
			break;
		default: /* a sleep ends, an epoll wait times out with 0 events */
			wake(t, 0);
		}
	}
}

struct regs *schedule(void)
{
	u64 now = now_ns();
	time_refine(now);
	expire(now);
	serial_poll();
	struct thread *cur = cpu0.cur, *next = NULL;
	if (cur != &idle && cur->state == T_RUNNABLE && !resched)
		next = cur;
	for (int i = 0; i < MAXT && !next; i++) {
		struct thread *t = &threads[(rr + i) % MAXT];
		if (t->state == T_RUNNABLE) {
			next = t;
			rr = (int)(t - threads) + 1;
		}
	}
	if (!next)
		next = &idle;
	resched = 0;

	/* Idle time: from a switch to the idle thread to the switch away. */
	static u64 idle_since;
	if (next != cur) {
		stats.switches++;
		if (next == &idle)
			idle_since = now;
		else if (cur == &idle)
			stats.idle_ns += now - idle_since;
		cpu0.cur = next;
		cpu0.kstack_top = next->kstack_top;
	}
	if (next != &idle) {
		if (fpu_owner != next) {
			if (fpu_owner)
				fx_save(fpu_owner->fx);
			fx_restore(next->fx);
			fpu_owner = next;
		}
		if (next->fs_base != fs_loaded) {
			wrmsr(0xc0000100, next->fs_base);
			fs_loaded = next->fs_base;
		}
		signal_deliver_pending(next, frame_of(next));
	}

	/* The next timer: the earliest deadline, or the slice's end when
	 * another thread waits for the CPU. The end is rounded up to a
	 * millisecond, so that a thread making calls moves it, and the LAPIC
	 * timer is written (timer_arm), once a millisecond, not every call. */
	u64 deadline = 0, slice = (now + SLICE_NS + SLICE_GRAIN_NS - 1) / SLICE_GRAIN_NS * SLICE_GRAIN_NS;
	for (int i = 0; i < MAXT; i++) {
		struct thread *t = &threads[i];
		if (t->state == T_BLOCKED && t->deadline && (!deadline || t->deadline < deadline))
			deadline = t->deadline;
		if (t->state == T_RUNNABLE && t != next && (!deadline || slice < deadline))
			deadline = slice;
	}
	timer_arm(deadline);
	return frame_of(next);
}

#define CLONE_VM 0x100
#define CLONE_THREAD 0x10000
#define CLONE_SETTLS 0x80000
#define CLONE_PARENT_SETTID 0x100000
#define CLONE_CHILD_CLEARTID 0x200000
#define CLONE_CHILD_SETTID 0x1000000

/*
 * sys_clone makes a thread (the only kind of clone there is: one address
 * space). The child resumes where the parent's SYSCALL returns, with
 * RAX = 0 and RSP = the new stack; that is all the Go runtime's clone
 * wrapper needs (runtime/sys_linux_amd64.s).
 */
i64 sys_clone(struct regs *r)
{
	struct thread *p = cpu0.cur;
	u64 flags = r->rdi, stack = r->rsi, ptid = r->rdx, ctid = r->r10, tls = r->r8;
	if ((flags & (CLONE_VM | CLONE_THREAD)) != (CLONE_VM | CLONE_THREAD))
		return -ENOSYS; /* no fork: there is one process */
	if (((flags & CLONE_PARENT_SETTID) && user_ok(ptid, 4, 1)) ||
	    ((flags & (CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID)) && user_ok(ctid, 4, 1)))
		return -EFAULT;
	struct thread *c = thread_new();
	if (!c)
		return -EAGAIN;
	struct regs *f = frame_of(c);
	*f = *r;
	f->rax = 0;
	if (stack)
		f->rsp = stack;
	c->fs_base = (flags & CLONE_SETTLS) ? tls : p->fs_base;
	c->blocked = p->blocked;
	fx_save(c->fx); /* the parent's live FPU state, as Linux copies it */
	if (flags & CLONE_PARENT_SETTID)
		*(u32 *)ptid = c->tid;
	if (flags & CLONE_CHILD_SETTID)
		*(u32 *)ctid = c->tid;
	if (flags & CLONE_CHILD_CLEARTID)
		c->clear_tid = ctid;
	c->state = T_RUNNABLE;
	return c->tid;
}

void thread_exit(struct thread *t)
{
	if (t->clear_tid && !user_ok(t->clear_tid, 4, 1)) {
		*(u32 *)t->clear_tid = 0;
		futex_wake(t->clear_tid, 1);
	}
	t->state = T_DEAD;
	if (fpu_owner == t)
		fpu_owner = NULL;
	resched = 1;
	for (int i = 0; i < MAXT; i++)
		if (threads[i].state == T_RUNNABLE || threads[i].state == T_BLOCKED)
			return;
	kprintf("metal: the last thread exited\n");
	acpi_poweroff();
}

i64 futex_wait(struct thread *t, u64 addr, u32 val, u64 deadline)
{
	if ((addr & 3) || user_ok(addr, 4, 0))
		return -EFAULT;
	if (*(volatile u32 *)addr != val)
		return -EAGAIN;
	t->wait_addr = addr;
	block(t, W_FUTEX, deadline);
	return 0;
}

i64 futex_wake(u64 addr, int n)
{
	int woken = 0;
	for (int i = 0; i < MAXT && woken < n; i++) {
		struct thread *t = &threads[i];
		if (t->state == T_BLOCKED && t->wait == W_FUTEX && t->wait_addr == addr) {
			wake(t, 0);
			woken++;
		}
	}
	return woken;
}
