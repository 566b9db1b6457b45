/*
 * debug.c: the shim's state on the console, on Ctrl-\ (lib.c), for a
 * machine that seems stuck: every thread and what it waits for, the
 * timer, the interrupt controller, the file descriptors and the device
 * interrupt counts. It runs in the console's interrupt, so it works however
 * the Go side is stuck, and changes nothing.
 */
#include "shim.h"

static const char *const state_names[] = {"free", "runnable", "blocked", "dead"};
static const char *const wait_names[] = {"-", "futex", "sleep", "epoll", "console"};

void debug_dump(void)
{
	u64 now = now_ns();
	kprintf("metal: debug at %lu us\n", now / 1000);
	stats_print();
	int n;
	struct thread *ts = threads_table(&n);
	for (int i = 0; i < n; i++) {
		struct thread *t = &ts[i];
		if (t->state != T_RUNNABLE && t->state != T_BLOCKED)
			continue;
		struct regs *f = frame_of(t);
		kprintf("metal:   tid %d %s%s wait %s %lx deadline %ld us, last call %lu, blocked at %lu us, woken at %lu us (%lu), pending %lx blocked %lx, rip %p rax %lx\n",
			t->tid, state_names[t->state], t == cpu0.cur ? " (current)" : "",
			t->state == T_BLOCKED ? wait_names[t->wait] : "-", t->wait_addr,
			t->deadline ? (i64)(t->deadline - now) / 1000 : 0, t->last_nr,
			t->blocked_at / 1000, t->woken_at / 1000, t->wakes, t->pending, t->blocked, f->rip, f->rax);
	}
	timer_dump();
	irq_dump();
	fs_dump();
}
