/*
 * signal.c: Linux signals, as far as the Go runtime uses them: handlers
 * (rt_sigaction), masks, the alternate stack, delivery as a Linux
 * rt_sigframe, and rt_sigreturn. Delivery happens on the way back to Go
 * code, on the thread's kernel stack, never on the IST.
 *
 * The frame is Linux's (arch/x86/include/asm/sigframe.h, uapi
 * asm/sigcontext.h): at the handler's RSP, pretcode (the restorer the
 * handler returns to), a ucontext whose mcontext is struct sigcontext,
 * then siginfo; the FXSAVE image 64-byte aligned above it. Go's handler
 * reads and edits the saved RIP/RSP there: that is how a nil dereference
 * becomes a panic (sigpanic) and how SIGURG preempts (asyncPreempt).
 */
#include "shim.h"

#define SA_ONSTACK 0x08000000UL
#define SA_NODEFER 0x40000000UL
#define SA_RESETHAND 0x80000000UL
#define SIG_DFL 0
#define SIG_IGN 1
#define SS_ONSTACK 1
#define SS_DISABLE 2
#define SI_TKILL (-6)
#define SI_KERNEL 0x80
#define UNBLOCKABLE ((1UL << (SIGKILL - 1)) | (1UL << (SIGSTOP - 1)))

struct k_sigaction { u64 handler, flags, restorer, mask; };
static struct k_sigaction actions[65];

struct sigcontext {
	u64 r8, r9, r10, r11, r12, r13, r14, r15;
	u64 rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	u16 cs, gs, fs, ss;
	u64 err, trapno, oldmask, cr2, fpstate;
	u64 reserved1[8];
};
struct ucontext {
	u64 uc_flags, uc_link;
	u64 ss_sp;
	u32 ss_flags, pad;
	u64 ss_size;
	struct sigcontext mc;
	u64 sigmask;
};
struct siginfo {
	int signo, errno_, code, pad;
	u64 f0; /* si_addr, or si_pid and si_uid */
	u64 rest[13];
};
struct rt_sigframe {
	u64 pretcode;
	struct ucontext uc;
	struct siginfo info;
};
_Static_assert(sizeof(struct sigcontext) == 256, "sigcontext");
_Static_assert(sizeof(struct ucontext) == 304, "ucontext");
_Static_assert(sizeof(struct siginfo) == 128, "siginfo");
_Static_assert(sizeof(struct rt_sigframe) == 440, "rt_sigframe");

static u64 bit(int sig) { return 1UL << (sig - 1); }

i64 sys_rt_sigaction(int sig, u64 act, u64 oact, u64 size)
{
	if (sig < 1 || sig > 64 || size != 8)
		return -EINVAL;
	if (act && (sig == SIGKILL || sig == SIGSTOP))
		return -EINVAL;
	if ((act && user_ok(act, sizeof(struct k_sigaction), 0)) ||
	    (oact && user_ok(oact, sizeof(struct k_sigaction), 1)))
		return -EFAULT;
	struct k_sigaction old = actions[sig];
	if (act) {
		actions[sig] = *(struct k_sigaction *)act;
		actions[sig].mask &= ~UNBLOCKABLE;
	}
	if (oact)
		*(struct k_sigaction *)oact = old;
	return 0;
}

i64 sys_rt_sigprocmask(struct thread *t, int how, u64 set, u64 oset, u64 size)
{
	if (size != 8)
		return -EINVAL;
	if ((set && user_ok(set, 8, 0)) || (oset && user_ok(oset, 8, 1)))
		return -EFAULT;
	u64 old = t->blocked;
	if (set) {
		u64 s = *(u64 *)set;
		switch (how) {
		case 0: t->blocked |= s; break;  /* SIG_BLOCK */
		case 1: t->blocked &= ~s; break; /* SIG_UNBLOCK */
		case 2: t->blocked = s; break;   /* SIG_SETMASK */
		default: return -EINVAL;
		}
		t->blocked &= ~UNBLOCKABLE;
	}
	if (oset)
		*(u64 *)oset = old;
	return 0;
}

static int on_altstack(struct thread *t, u64 sp)
{
	return t->ss_size && sp > t->ss_sp && sp <= t->ss_sp + t->ss_size;
}

i64 sys_sigaltstack(struct thread *t, struct regs *r, u64 ss, u64 oss)
{
	if ((ss && user_ok(ss, 24, 0)) || (oss && user_ok(oss, 24, 1)))
		return -EFAULT;
	u64 osp = t->ss_sp, osize = t->ss_size;
	int oflags = !t->ss_size ? SS_DISABLE : on_altstack(t, r->rsp) ? SS_ONSTACK : 0;
	if (ss) {
		if (on_altstack(t, r->rsp))
			return -EPERM;
		u64 sp = *(u64 *)ss, size = *(u64 *)(ss + 16);
		int flags = *(int *)(ss + 8);
		if (flags & SS_DISABLE) {
			t->ss_sp = t->ss_size = 0;
		} else {
			if (size < 2048) /* MINSIGSTKSZ */
				return -ENOMEM;
			t->ss_sp = sp;
			t->ss_size = size;
		}
	}
	if (oss) {
		*(u64 *)oss = osp;
		*(int *)(oss + 8) = oflags;
		*(u64 *)(oss + 16) = osize;
	}
	return 0;
}

/* die ends the machine the way Linux ends a process a signal kills. */
static __attribute__((noreturn)) void die(struct regs *r, int sig)
{
	kprintf("metal: /init killed by signal %d\n", sig);
	dump_regs(r);
	acpi_poweroff();
}

/* build_frame pushes an rt_sigframe for sig on the thread's stack (or its
 * alternate stack) and points r at the handler. 0, or -EFAULT when the
 * stack cannot take it. The FPU must hold t's state. */
static int build_frame(struct thread *t, struct regs *r, int sig, struct siginfo *info)
{
	struct k_sigaction *a = &actions[sig];
	u64 sp = r->rsp - 128; /* the red zone of the interrupted code */
	if ((a->flags & SA_ONSTACK) && t->ss_size && !on_altstack(t, r->rsp))
		sp = t->ss_sp + t->ss_size;
	u64 fp = (sp - fpu_size) & ~63UL;
	u64 fa = ((fp - sizeof(struct rt_sigframe)) & ~15UL) - 8;
	if (user_ok(fa, sp - fa, 1))
		return -EFAULT;
	fx_save((u8 *)fp);
	struct rt_sigframe *f = (struct rt_sigframe *)fa;
	memset(f, 0, sizeof *f);
	f->pretcode = a->restorer;
	f->uc.ss_sp = t->ss_sp;
	f->uc.ss_size = t->ss_size;
	f->uc.ss_flags = !t->ss_size ? SS_DISABLE : on_altstack(t, r->rsp) ? SS_ONSTACK : 0;
	struct sigcontext *m = &f->uc.mc;
	m->r8 = r->r8; m->r9 = r->r9; m->r10 = r->r10; m->r11 = r->r11;
	m->r12 = r->r12; m->r13 = r->r13; m->r14 = r->r14; m->r15 = r->r15;
	m->rdi = r->rdi; m->rsi = r->rsi; m->rbp = r->rbp; m->rbx = r->rbx;
	m->rdx = r->rdx; m->rax = r->rax; m->rcx = r->rcx; m->rsp = r->rsp;
	m->rip = r->rip; m->eflags = r->rflags;
	m->cs = (u16)r->cs; m->ss = (u16)r->ss;
	m->err = r->vector < 32 ? r->err : 0;
	m->trapno = r->vector < 32 ? r->vector : 0;
	m->oldmask = t->blocked;
	m->cr2 = r->vector == 14 ? read_cr2() : 0;
	m->fpstate = fp;
	f->uc.sigmask = t->blocked;
	f->info = *info;

	t->blocked |= a->mask | ((a->flags & SA_NODEFER) ? 0 : bit(sig));
	t->blocked &= ~UNBLOCKABLE;
	if (a->flags & SA_RESETHAND)
		a->handler = SIG_DFL;
	r->rip = a->handler;
	r->rsp = fa;
	r->rdi = sig;
	r->rsi = (u64)&f->info;
	r->rdx = (u64)&f->uc;
	r->rax = 0;
	r->rflags &= ~(0x100UL | 0x400UL); /* TF, DF */
	return 0;
}

i64 signal_send(struct thread *t, int sig)
{
	if (sig < 0 || sig > 64)
		return -EINVAL;
	if (sig == 0)
		return 0;
	if (actions[sig].handler == SIG_IGN)
		return 0;
	t->pending |= bit(sig);
	if (t == cpu0.cur)
		need_resched(); /* deliver on the way out of this call */
	return 0;
}

static int default_ignored(int sig)
{
	return sig == SIGURG || sig == 17 /* SIGCHLD */ || sig == 28 /* SIGWINCH */;
}

void signal_deliver_pending(struct thread *t, struct regs *r)
{
	u64 ready = t->pending & ~t->blocked;
	while (ready) {
		int sig = __builtin_ctzl(ready) + 1;
		t->pending &= ~bit(sig);
		ready &= ~bit(sig);
		u64 h = actions[sig].handler;
		if (h == SIG_IGN || (h == SIG_DFL && default_ignored(sig)))
			continue;
		if (h == SIG_DFL)
			die(r, sig);
		struct siginfo info = {.signo = sig, .code = SI_TKILL, .f0 = 1 /* si_pid */};
		if (build_frame(t, r, sig, &info))
			die(r, SIGSEGV);
		return; /* one at a time: the rest after rt_sigreturn */
	}
}

/* signal_fault turns an exception in Go code into the synchronous signal
 * Linux would send (a #PF is SIGSEGV with si_addr = CR2). */
void signal_fault(struct thread *t, struct regs *r, int sig, int code, u64 addr)
{
	u64 h = actions[sig].handler;
	if (h == SIG_DFL || h == SIG_IGN || (t->blocked & bit(sig))) {
		kprintf("metal: signal %d (code %d, address %lx) with no handler\n", sig, code, addr);
		die(r, sig);
	}
	struct siginfo info = {.signo = sig, .code = code, .f0 = addr};
	if (build_frame(t, r, sig, &info))
		die(r, sig);
}

/* rt_sigreturn: the handler returned to its restorer, which made this
 * call with RSP just past pretcode. */
i64 sys_rt_sigreturn(struct thread *t, struct regs *r)
{
	u64 fa = r->rsp - 8;
	if (user_ok(fa, sizeof(struct rt_sigframe), 0))
		die(r, SIGSEGV);
	struct rt_sigframe *f = (struct rt_sigframe *)fa;
	struct sigcontext *m = &f->uc.mc;
	r->r8 = m->r8; r->r9 = m->r9; r->r10 = m->r10; r->r11 = m->r11;
	r->r12 = m->r12; r->r13 = m->r13; r->r14 = m->r14; r->r15 = m->r15;
	r->rdi = m->rdi; r->rsi = m->rsi; r->rbp = m->rbp; r->rbx = m->rbx;
	r->rdx = m->rdx; r->rax = m->rax; r->rcx = m->rcx; r->rsp = m->rsp;
	r->rip = m->rip;
	/* Only the flags a program may change (Linux's FIX_EFLAGS); IF stays
	 * on, or ring 0 would never take an interrupt again. */
	const u64 user = 0x1UL | 0x4 | 0x10 | 0x40 | 0x80 | 0x100 | 0x400 | 0x800 | 0x10000 | 0x40000;
	r->rflags = (r->rflags & ~user) | (m->eflags & user) | 0x200;
	r->cs = KCODE;
	r->ss = KDATA;
	t->blocked = f->uc.sigmask & ~UNBLOCKABLE;
	if (m->fpstate && (user_ok(m->fpstate, fpu_size, 1) || fx_restore((u8 *)m->fpstate)))
		die(r, SIGSEGV);
	return r->rax;
}
