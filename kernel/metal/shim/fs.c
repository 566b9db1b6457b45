/*
 * fs.c: the file descriptors the Go process can have: the console on
 * 0-2 (the console UART), eventfds and epoll instances (the Go netpoller's), and
 * /proc/cmdline, the one file there is.
 */
#include "shim.h"

enum { F_NONE, F_CONSOLE, F_EVENTFD, F_EPOLL, F_PROC };
#define NFD 64
#define O_NONBLOCK 0x800
#define O_CLOEXEC 0x80000
#define EPOLLIN 0x1
#define EPOLLOUT 0x4
#define EPOLLERR 0x8
#define EPOLLHUP 0x10
#define EPOLLET 0x80000000U

static struct file {
	int type;
	int flags; /* O_NONBLOCK, O_CLOEXEC as the caller set them */
	u64 count; /* eventfd */
	u64 gen;   /* eventfd: bumped by every read and write, the edges EPOLLET sees */
	const char *data;
	u64 len, off;
} files[NFD];

/*
 * A registration. Level-triggered, it reports while the file is ready;
 * with EPOLLET (the Go netpoller registers every network file so) only
 * after an edge: when registered, and then each time the file's state
 * changes (its generation moves), as Linux reports an edge-triggered file
 * once per wake-up of its wait queue. Reporting a file that is always
 * writable (the console) every time would keep epoll_pwait from ever
 * sleeping: the netpoller would spin.
 */
static struct epi { int epfd, fd; u32 events; u64 data, seen; } epis[128];

/* The console's generation: bumped when input arrives. */
static u64 console_gen;

static u64 gen_of(int fd)
{
	return files[fd].type == F_CONSOLE ? console_gen : files[fd].gen;
}

static char cmdline_file[4097];

void fs_init(void)
{
	for (int i = 0; i < 3; i++) {
		files[i].type = F_CONSOLE;
		files[i].flags = 2; /* O_RDWR */
	}
	u64 n = strlen(boot_cmdline);
	memcpy(cmdline_file, boot_cmdline, n);
	cmdline_file[n] = '\n'; /* as Linux's /proc/cmdline */
}

static struct file *fd_get(i64 fd, int type)
{
	if (fd < 0 || fd >= NFD || files[fd].type == F_NONE)
		return NULL;
	if (type != F_NONE && files[fd].type != type)
		return NULL;
	return &files[fd];
}

static i64 fd_new(int type, int flags)
{
	for (int i = 0; i < NFD; i++) {
		if (files[i].type == F_NONE) {
			memset(&files[i], 0, sizeof files[i]);
			files[i].type = type;
			files[i].flags = flags;
			return i;
		}
	}
	return -EMFILE;
}

/* copy_str copies a NUL-terminated string in from the Go process. */
static int copy_str(u64 addr, char *buf, int max)
{
	for (int i = 0; i < max; i++) {
		if (user_ok(addr + i, 1, 0))
			return -EFAULT;
		if (!(buf[i] = *(char *)(addr + i)))
			return 0;
	}
	return -EINVAL;
}

static u32 ready(int fd)
{
	struct file *f = &files[fd];
	switch (f->type) {
	case F_EVENTFD: return EPOLLOUT | (f->count ? EPOLLIN : 0);
	case F_CONSOLE: return EPOLLOUT | (serial_ready() ? EPOLLIN : 0);
	case F_PROC: return EPOLLIN | EPOLLOUT;
	case F_NONE: return EPOLLHUP;
	}
	return 0;
}

/* epoll_collect writes the ready registrations of epfd as struct
 * epoll_event (packed on x86-64: u32 events, u64 data) and counts them. */
static int epoll_collect(int epfd, u64 out, int max)
{
	int n = 0;
	for (int i = 0; i < 128 && n < max; i++) {
		struct epi *e = &epis[i];
		if (e->epfd != epfd || !e->events)
			continue;
		if (e->events & EPOLLET) {
			u64 g = gen_of(e->fd);
			if (e->seen == g)
				continue;
			e->seen = g; /* this edge is consumed, ready or not */
		}
		u32 r = ready(e->fd) & (e->events | EPOLLERR | EPOLLHUP);
		if (!r)
			continue;
		*(u32 *)(out + 12 * n) = r;
		*(u64 *)(out + 12 * n + 4) = e->data;
		n++;
	}
	return n;
}

int fs_is_eventfd(i64 fd) { return fd_get(fd, F_EVENTFD) != NULL; }

/* eventfd_add adds v to an eventfd's count: an edge for its EPOLLET
 * registrations, and the end of the epoll waits it makes ready. */
static void eventfd_add(struct file *f, u64 v)
{
	f->count += v;
	f->gen++;
	epoll_event_ready();
}

/* eventfd_signal adds one, as a write of 1 does: a device interrupt
 * (metal.c) waking the Go netpoller. */
void eventfd_signal(int fd)
{
	struct file *f = fd_get(fd, F_EVENTFD);
	if (f)
		eventfd_add(f, 1);
}

/* console_readable: input arrived (thread.c), an edge for the console. */
void console_readable(void)
{
	console_gen++;
	epoll_event_ready();
}

/* epoll_event_ready finishes the epoll waits that something became
 * ready for. */
void epoll_event_ready(void)
{
	int nt;
	struct thread *ts = threads_table(&nt);
	for (int i = 0; i < nt; i++) {
		struct thread *t = &ts[i];
		if (t->state != T_BLOCKED || t->wait != W_EPOLL)
			continue;
		int n = epoll_collect((int)(t->wait_arg & 0xffffffff), t->wait_addr, (int)(t->wait_arg >> 32));
		if (n)
			wake(t, n);
	}
}

static i64 epoll_ctl(i64 epfd, int op, i64 fd, u64 ev)
{
	if (!fd_get(epfd, F_EPOLL) || !fd_get(fd, F_NONE) || fd == epfd)
		return -EBADF;
	if (op != 2 && user_ok(ev, 12, 0))
		return -EFAULT;
	struct epi *e = NULL, *free = NULL;
	for (int i = 0; i < 128; i++) {
		if (epis[i].events && epis[i].epfd == epfd && epis[i].fd == fd)
			e = &epis[i];
		if (!epis[i].events && !free)
			free = &epis[i];
	}
	switch (op) {
	case 1: /* EPOLL_CTL_ADD */
		if (e)
			return -EEXIST;
		if (!free)
			return -ENOMEM;
		e = free;
		e->epfd = (int)epfd;
		e->fd = (int)fd;
		/* fallthrough */
	case 3: /* EPOLL_CTL_MOD */
		if (!e)
			return -ENOENT;
		e->events = *(u32 *)ev | EPOLLERR | EPOLLHUP;
		e->data = *(u64 *)(ev + 4);
		e->seen = gen_of((int)fd) - 1; /* ADD and MOD report the state once */
		epoll_event_ready();
		return 0;
	case 2: /* EPOLL_CTL_DEL */
		if (!e)
			return -ENOENT;
		e->events = 0;
		return 0;
	}
	return -EINVAL;
}

/* The parts of struct stat (x86-64, 144 bytes) that mean something here. */
static i64 stat_fill(struct file *f, u64 st)
{
	if (user_ok(st, 144, 1))
		return -EFAULT;
	memset((void *)st, 0, 144);
	u32 mode = f->type == F_CONSOLE ? 0020620 : f->type == F_PROC ? 0100444 : 0600;
	*(u32 *)(st + 24) = mode;
	*(u64 *)(st + 16) = 1;    /* st_nlink */
	*(u64 *)(st + 56) = 4096; /* st_blksize */
	return 0;
}

static i64 do_read(struct thread *t, i64 fd, u64 buf, u64 n)
{
	struct file *f = fd_get(fd, F_NONE);
	if (!f)
		return -EBADF;
	if (user_ok(buf, n, 1))
		return -EFAULT;
	switch (f->type) {
	case F_PROC: {
		u64 left = f->len > f->off ? f->len - f->off : 0;
		if (n > left)
			n = left;
		memcpy((void *)buf, f->data + f->off, n);
		f->off += n;
		return n;
	}
	case F_EVENTFD:
		if (n < 8)
			return -EINVAL;
		if (!f->count)
			return -EAGAIN;
		*(u64 *)buf = f->count;
		f->count = 0;
		f->gen++;
		return 8;
	case F_CONSOLE: {
		u64 got = 0;
		int c;
		while (got < n && (c = serial_getc()) >= 0)
			*(u8 *)(buf + got++) = (u8)c;
		if (got || !n)
			return got;
		if (f->flags & O_NONBLOCK)
			return -EAGAIN;
		/* The reader sleeps until the console's interrupt (ioapic.c), or, with
		 * no I/O APIC, the scheduler polls the UART for it (thread.c); with
		 * no UART, for good. */
		t->wait_addr = buf;
		t->wait_arg = n;
		block(t, W_CONSOLE, console_irq || !serial_up() ? 0 : now_ns() + 20000000UL);
		return 0;
	}
	}
	return -EINVAL;
}

static i64 do_write(i64 fd, u64 buf, u64 n)
{
	struct file *f = fd_get(fd, F_NONE);
	if (!f)
		return -EBADF;
	if (user_ok(buf, n, 0))
		return -EFAULT;
	switch (f->type) {
	case F_CONSOLE:
		for (u64 i = 0; i < n; i++) {
			char c = *(char *)(buf + i);
			if (c == '\n')
				serial_putc('\r'); /* the tty's ONLCR */
			serial_putc(c);
		}
		serial_kick();
		return n;
	case F_EVENTFD:
		if (n < 8)
			return -EINVAL;
		eventfd_add(f, *(u64 *)buf);
		return 8;
	}
	return -EBADF;
}

static i64 do_openat(u64 path, u64 flags)
{
	char p[256];
	int err = copy_str(path, p, sizeof p);
	if (err)
		return err;
	/* The console, under the names Linux gives it. */
	if (!memcmp(p, "/dev/console", 13) || (!memcmp(p, "/dev/", 5) && !memcmp(p + 5, console.name, strlen(console.name) + 1)))
		return fd_new(F_CONSOLE, (int)flags);
	if (memcmp(p, "/proc/cmdline", 14))
		return -ENOENT;
	i64 fd = fd_new(F_PROC, (int)flags);
	if (fd >= 0) {
		files[fd].data = cmdline_file;
		files[fd].len = strlen(cmdline_file);
	}
	return fd;
}

/* fs_call runs the file system calls; *handled is 0 for any other. */
i64 fs_call(struct thread *t, struct regs *r, int nr, int *handled)
{
	u64 a0 = r->rdi, a1 = r->rsi, a2 = r->rdx, a3 = r->r10;
	struct file *f;
	*handled = 1;
	switch (nr) {
	case 0: return do_read(t, a0, a1, a2);
	case 1: return do_write(a0, a1, a2);
	case 3: /* close */
		if (!(f = fd_get(a0, F_NONE)))
			return -EBADF;
		for (int i = 0; i < 128; i++)
			if (epis[i].fd == (int)a0 || epis[i].epfd == (int)a0)
				epis[i].events = 0;
		irq_fd_closed((int)a0);
		f->type = F_NONE;
		return 0;
	case 5: /* fstat */
		if (!(f = fd_get(a0, F_NONE)))
			return -EBADF;
		return stat_fill(f, a1);
	case 262: { /* newfstatat */
		char p[256];
		int err = copy_str(a1, p, sizeof p);
		if (err)
			return err;
		if (!p[0] && (a3 & 0x1000)) { /* AT_EMPTY_PATH */
			if (!(f = fd_get(a0, F_NONE)))
				return -EBADF;
			return stat_fill(f, a2);
		}
		if (memcmp(p, "/proc/cmdline", 14))
			return -ENOENT;
		struct file pf = {.type = F_PROC};
		return stat_fill(&pf, a2);
	}
	case 267: { /* readlinkat: /proc/self/exe, which Go's os package reads at init */
		char p[256];
		int err = copy_str(a1, p, sizeof p);
		if (err)
			return err;
		if (memcmp(p, "/proc/self/exe", 15))
			return -ENOENT;
		static const char exe[] = "/init"; /* argv[0] (boot.c) */
		u64 n = a3 < sizeof exe - 1 ? a3 : sizeof exe - 1;
		if (user_ok(a2, n, 1))
			return -EFAULT;
		memcpy((void *)a2, exe, n);
		return (i64)n;
	}
	case 8: /* lseek */
		if (!(f = fd_get(a0, F_PROC)))
			return fd_get(a0, F_NONE) ? -29 /* ESPIPE */ : -EBADF;
		if (a2 == 0)
			f->off = a1;
		else if (a2 == 1)
			f->off += a1;
		else if (a2 == 2)
			f->off = f->len + a1;
		else
			return -EINVAL;
		return f->off;
	case 16: /* ioctl */
		return fd_get(a0, F_NONE) ? -ENOTTY : -EBADF;
	case 72: /* fcntl */
		if (!(f = fd_get(a0, F_NONE)))
			return -EBADF;
		switch (a1) {
		case 1: return (f->flags & O_CLOEXEC) ? 1 : 0;                       /* F_GETFD */
		case 2: f->flags = (f->flags & ~O_CLOEXEC) | (a2 & 1 ? O_CLOEXEC : 0); return 0;
		case 3: return f->flags & ~O_CLOEXEC;                                /* F_GETFL */
		case 4: f->flags = (f->flags & O_CLOEXEC) | ((int)a2 & O_NONBLOCK) | (f->flags & 3); return 0;
		}
		return -EINVAL;
	case 257: return do_openat(a1, a2);
	case 290: { /* eventfd2 */
		i64 fd = fd_new(F_EVENTFD, 2 | (int)(a1 & (O_NONBLOCK | O_CLOEXEC)));
		if (fd >= 0)
			files[fd].count = (u32)a0;
		return fd;
	}
	case 291: return fd_new(F_EPOLL, 2 | (int)(a0 & O_CLOEXEC)); /* epoll_create1 */
	case 33:  /* dup2 */
	case 292: /* dup3 */
		if (!(f = fd_get(a0, F_NONE)) || a1 >= NFD)
			return -EBADF;
		if (a0 == a1)
			return nr == 33 ? (i64)a1 : -EINVAL;
		for (int i = 0; i < 128; i++)
			if (epis[i].fd == (int)a1)
				epis[i].events = 0;
		irq_fd_closed((int)a1);
		files[a1] = *f;
		files[a1].flags = (f->flags & ~O_CLOEXEC) | (nr == 292 && (a2 & O_CLOEXEC) ? O_CLOEXEC : 0);
		return a1;
	case 233: return epoll_ctl(a0, (int)a1, a2, a3);
	case 232: /* epoll_wait */
	case 281: { /* epoll_pwait; the signal mask argument is not applied */
		int max = (int)a2, timeout = (int)a3;
		if (!fd_get(a0, F_EPOLL))
			return -EBADF;
		if (max <= 0 || max > 4096)
			return -EINVAL;
		if (user_ok(a1, 12UL * max, 1))
			return -EFAULT;
		int n = epoll_collect((int)a0, a1, max);
		if (n || !timeout)
			return n;
		t->wait_addr = a1;
		t->wait_arg = a0 | (u64)max << 32;
		block(t, W_EPOLL, timeout > 0 ? now_ns() + (u64)timeout * 1000000UL : 0);
		return 0;
	}
	}
	*handled = 0;
	return 0;
}

void fs_dump(void)
{
	static const char *const names[] = {"-", "console", "eventfd", "epoll", "proc"};
	for (int i = 0; i < NFD; i++)
		if (files[i].type != F_NONE)
			kprintf("metal:   fd %d %s flags %x count %lu ready %x\n", i, names[files[i].type],
				files[i].flags, files[i].count, ready(i));
	for (int i = 0; i < 128; i++)
		if (epis[i].events)
			kprintf("metal:   epoll %d fd %d events %x data %lx\n", epis[i].epfd, epis[i].fd,
				epis[i].events, epis[i].data);
}
