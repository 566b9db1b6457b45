/*
 * syscall.c: the Linux x86-64 system calls the Go runtime and its
 * standard library make (numbers: arch/x86/entry/syscalls/syscall_64.tbl).
 * Arguments in RDI, RSI, RDX, R10, R8, R9; the result, or -errno, in RAX.
 * A call that blocks leaves RAX to whoever wakes the thread.
 */
#include "shim.h"

struct timespec { i64 sec, nsec; };

/* read_timespec: 0 and *ns, or -EFAULT / -EINVAL. */
static int read_timespec(u64 addr, u64 *ns)
{
	if (user_ok(addr, sizeof(struct timespec), 0))
		return -EFAULT;
	struct timespec *ts = (struct timespec *)addr;
	if (ts->sec < 0 || ts->nsec < 0 || ts->nsec >= 1000000000)
		return -EINVAL;
	*ns = (u64)ts->sec * 1000000000UL + (u64)ts->nsec;
	return 0;
}

static i64 clock_gettime(u64 clk, u64 out)
{
	if (clk > 11)
		return -EINVAL;
	if (user_ok(out, sizeof(struct timespec), 1))
		return -EFAULT;
	u64 ns = now_ns();
	if (clk == 0 || clk == 5 || clk == 8 || clk == 11) /* REALTIME, _COARSE, _ALARM, TAI */
		ns += realtime_offset_ns();
	struct timespec *ts = (struct timespec *)out;
	ts->sec = (i64)(ns / 1000000000UL);
	ts->nsec = (i64)(ns % 1000000000UL);
	return 0;
}

static i64 sleep_until(struct thread *t, u64 deadline)
{
	if (deadline <= now_ns()) {
		need_resched();
		return 0;
	}
	block(t, W_SLEEP, deadline);
	return 0;
}

static i64 futex(struct thread *t, u64 addr, int op, u32 val, u64 timeout)
{
	switch (op & 127) { /* without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME */
	case 0: { /* FUTEX_WAIT, relative timeout */
		u64 deadline = 0, ns;
		if (timeout) {
			int err = read_timespec(timeout, &ns);
			if (err)
				return err;
			deadline = now_ns() + ns;
			if (!deadline)
				deadline = 1;
		}
		return futex_wait(t, addr, val, deadline);
	}
	case 1: /* FUTEX_WAKE */
		return futex_wake(addr, (int)val);
	}
	return -ENOSYS;
}

/* getrandom from RDRAND (CPUID.01H:ECX bit 30), retried as SDM vol 1
 * 7.3.17.1 advises. */
i64 rdrand_fill(u64 buf, u64 n)
{
	u32 c[4];
	cpuid(1, 0, c);
	if (!(c[2] & (1U << 30)))
		return -ENOSYS;
	if (user_ok(buf, n, 1))
		return -EFAULT;
	for (u64 i = 0; i < n;) {
		u64 v;
		u8 ok = 0;
		for (int try = 0; try < 10 && !ok; try++)
			__asm__ volatile("rdrand %0; setc %1" : "=r"(v), "=qm"(ok));
		if (!ok)
			return i ? (i64)i : -EAGAIN;
		for (int b = 0; b < 8 && i < n; b++, i++, v >>= 8)
			*(u8 *)(buf + i) = (u8)v;
	}
	return n;
}

static void put_field(u64 at, const char *s)
{
	u64 n = strlen(s);
	memcpy((void *)at, s, n + 1);
}

static i64 uname(u64 buf)
{
	if (user_ok(buf, 6 * 65, 1))
		return -EFAULT;
	memset((void *)buf, 0, 6 * 65);
	put_field(buf + 0 * 65, "Linux");
	put_field(buf + 1 * 65, "ether9");
	put_field(buf + 2 * 65, "6.1.0-metal");
	put_field(buf + 3 * 65, "#1 ether9 metal shim");
	put_field(buf + 4 * 65, "x86_64");
	return 0;
}

static i64 prlimit(u64 resource, u64 old)
{
	if (!old)
		return 0; /* a new limit changes nothing here */
	if (user_ok(old, 16, 1))
		return -EFAULT;
	u64 cur = ~0UL, max = ~0UL;
	if (resource == 7) /* RLIMIT_NOFILE: the fd table */
		cur = max = 64;
	if (resource == 3) /* RLIMIT_STACK: the main thread's */
		cur = 8UL << 20;
	*(u64 *)old = cur;
	*(u64 *)(old + 8) = max;
	return 0;
}

static i64 mount(u64 fstype)
{
	char fs[16];
	for (int i = 0; i < 16; i++) {
		if (user_ok(fstype + i, 1, 0))
			return -EFAULT;
		if (!(fs[i] = *(char *)(fstype + i)))
			break;
		if (i == 15)
			return -ENODEV;
	}
	/* proc is always there: its one file, /proc/cmdline (fs.c). */
	return memcmp(fs, "proc", 5) ? -ENODEV : 0;
}

#define LINUX_REBOOT_CMD_RESTART 0x01234567U
#define LINUX_REBOOT_CMD_HALT 0xcdef0123U
#define LINUX_REBOOT_CMD_POWER_OFF 0x4321fedcU

static i64 reboot(u64 magic1, u64 magic2, u32 cmd)
{
	if ((u32)magic1 != 0xfee1dead ||
	    ((u32)magic2 != 672274793 && (u32)magic2 != 85072278 && (u32)magic2 != 369367448 && (u32)magic2 != 537993216))
		return -EINVAL;
	switch (cmd) {
	case LINUX_REBOOT_CMD_POWER_OFF:
		stats_print();
		kprintf("metal: power off\n");
		acpi_poweroff();
	case LINUX_REBOOT_CMD_RESTART:
		stats_print();
		kprintf("metal: restart\n");
		acpi_reset();
	case LINUX_REBOOT_CMD_HALT:
		kprintf("metal: halted\n");
		for (;;)
			__asm__ volatile("cli; hlt");
	}
	return -EINVAL;
}

static i64 kill_tid(int tid, int sig)
{
	struct thread *t = thread_by_tid(tid);
	return t ? signal_send(t, sig) : -ESRCH;
}

static i64 syscall(struct thread *t, struct regs *r)
{
	u64 nr = r->rax, a0 = r->rdi, a1 = r->rsi, a2 = r->rdx, a3 = r->r10, a4 = r->r8, a5 = r->r9;
	int handled;
	i64 v = fs_call(t, r, (int)nr, &handled);
	if (handled)
		return v;
	switch (nr) {
	case 9: return sys_mmap(a0, a1, a2, a3, (i64)a4, a5);
	case 11: return sys_munmap(a0, a1);
	case 28: return sys_madvise(a0, a1, a2);
	case 13: return sys_rt_sigaction((int)a0, a1, a2, a3);
	case 14: return sys_rt_sigprocmask(t, (int)a0, a1, a2, a3);
	case 15: return sys_rt_sigreturn(t, r);
	case 131: return sys_sigaltstack(t, r, a0, a1);
	case 24: need_resched(); return 0; /* sched_yield */
	case 35: { /* nanosleep */
		u64 ns;
		int err = read_timespec(a0, &ns);
		return err ? err : sleep_until(t, now_ns() + ns);
	}
	case 230: { /* clock_nanosleep */
		u64 ns;
		int err = read_timespec(a2, &ns);
		if (err)
			return err;
		if (a1 & 1) /* TIMER_ABSTIME */
			return sleep_until(t, a0 == 0 || a0 == 11 ? ns - realtime_offset_ns() : ns);
		return sleep_until(t, now_ns() + ns);
	}
	case 228: stats.clock_gettime++; return clock_gettime(a0, a1);
	case 229: /* clock_getres: 1 ns */
		if (a1) {
			if (user_ok(a1, 16, 1))
				return -EFAULT;
			((struct timespec *)a1)->sec = 0;
			((struct timespec *)a1)->nsec = 1;
		}
		return 0;
	case 202: return futex(t, a0, (int)a1, (u32)a2, a3);
	case 56: return sys_clone(r);
	case 60: thread_exit(t); return 0; /* exit: this thread */
	case 231: /* exit_group */
		kprintf("metal: /init exited with status %d\n", (int)a0);
		stats_print();
		acpi_poweroff();
	case 39: return 1;         /* getpid: /init is PID 1 */
	case 110: return 0;        /* getppid */
	case 186: return t->tid;   /* gettid */
	case 218: t->clear_tid = a0; return t->tid; /* set_tid_address */
	case 102: case 104: case 107: case 108: return 0; /* root */
	case 62: /* kill: the process is PID 1 */
		return (int)a0 == 1 || (int)a0 == 0 || (int)a0 == -1 ? kill_tid(1, (int)a1) : -ESRCH;
	case 200: return kill_tid((int)a0, (int)a1);           /* tkill */
	case 234: return (int)a0 == 1 ? kill_tid((int)a1, (int)a2) : -ESRCH; /* tgkill */
	case 158: /* arch_prctl */
		if (a0 == 0x1002) { /* ARCH_SET_FS: Go's TLS */
			t->fs_base = a1;
			wrmsr(0xc0000100, a1);
			return 0;
		}
		if (a0 == 0x1003) {
			if (user_ok(a1, 8, 1))
				return -EFAULT;
			*(u64 *)a1 = t->fs_base;
			return 0;
		}
		return -EINVAL; /* GS belongs to the shim */
	case 204: /* sched_getaffinity: CPU 0 */
		if (a1 < 8)
			return -EINVAL;
		if (user_ok(a2, 8, 1))
			return -EFAULT;
		*(u64 *)a2 = 1;
		return 8;
	case 318: return rdrand_fill(a0, a1);
	case 63: return uname(a0);
	case 302: return prlimit(a1, a3);
	case 157: return -EINVAL; /* prctl */
	case 165: return mount(a2);
	case 169: return reboot(a0, a1, (u32)a2);
	}
	if (nr >= 0x4d00 && nr < 0x4e00)
		return metal_call(nr, a0, a1);
	static u64 said[8];
	if (nr < 512 && !(said[nr / 64] & (1UL << (nr % 64)))) {
		said[nr / 64] |= 1UL << (nr % 64);
		kprintf("metal: system call %lu is not implemented (ENOSYS)\n", nr);
	}
	return -ENOSYS;
}

/* strace is set by metal.strace on the command line: every call is
 * printed with its first three arguments and result. */
int strace;

void do_syscall(struct thread *t, struct regs *r)
{
	u64 nr = r->rax, a0 = r->rdi, a1 = r->rsi, a2 = r->rdx;
	t->last_nr = nr;
	i64 v = syscall(t, r);
	if (strace)
		kprintf("metal: [%d] %lu(%lx, %lx, %lx) = %ld%s\n", t->tid, nr, a0, a1, a2, v,
			t->state == T_BLOCKED ? " (blocked)" : "");
	if (t->state == T_RUNNABLE)
		r->rax = (u64)v;
}
