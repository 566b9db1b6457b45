/*
 * The shim: a small ring-0 kernel that plays Linux for one stock, static
 * Go binary (GOOS=linux GOARCH=amd64 CGO_ENABLED=0). Everything runs in
 * ring 0 in one address space: physical memory is identity mapped, the Go
 * heap is demand paged above it, and the Go code's SYSCALL lands here.
 *
 * Section numbers "SDM x.y" are of the Intel 64 and IA-32 Architectures
 * Software Developer's Manual, volume 3A unless said otherwise; "ACPI x.y"
 * of the ACPI 6.5 specification.
 */
#ifndef SHIM_H
#define SHIM_H

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long u64;
typedef long i64;

#define NULL ((void *)0)
#define PAGE 4096UL

/* Selectors of the GDT built in entry.S. */
#define KCODE 0x08
#define KDATA 0x10
#define TSSSEL 0x28

/* Vectors: 0-31 exceptions, 32-47 the remapped (and masked) 8259s. */
#define VEC_TIMER 0x40
#define VEC_CONSOLE 0x41
#define VEC_SPURIOUS 0xff
#define VEC_SYSCALL 0x100 /* not a vector: marks a frame made by SYSCALL */

/*
 * regs is the frame every entry into the shim builds at the top of the
 * current thread's kernel stack (entry.S): the general registers, then
 * what an interrupt pushes (SDM 6.14.2, 64-bit stack frame). A thread that
 * is not running is exactly this frame; switching threads is returning
 * another thread's frame to the common exit, which pops it and IRETQs.
 */
struct regs {
	u64 r15, r14, r13, r12, r11, r10, r9, r8;
	u64 rbp, rdi, rsi, rdx, rcx, rbx, rax;
	u64 vector, err;
	u64 rip, cs, rflags, rsp, ss;
};

/* Per-CPU data at GS base; entry.S knows the first four offsets. */
struct cpu {
	u64 scratch;      /* 0: the Go stack pointer while SYSCALL switches */
	u64 kstack_top;   /* 8: top of the running thread's kernel stack */
	u64 in_kernel;    /* 16: nonzero while the shim's C code runs */
	struct thread *cur;
};
extern struct cpu cpu0;

/* Linux errno values the system calls return, negated. */
enum {
	EPERM = 1, ENOENT = 2, ESRCH = 3, EINTR = 4, EBADF = 9, EAGAIN = 11,
	ENOMEM = 12, EFAULT = 14, EEXIST = 17, ENODEV = 19, EINVAL = 22,
	EMFILE = 24, ENOTTY = 25, ENOSPC = 28, ENOSYS = 38, ETIMEDOUT = 110,
};

/* lib.c */
void *memset(void *d, int c, u64 n);
void *memcpy(void *d, const void *s, u64 n);
int memcmp(const void *a, const void *b, u64 n);
u64 strlen(const char *s);
void kprintf(const char *fmt, ...);
int serial_init(u16 port, u32 baud); /* 0: no UART answers there */
int serial_present(u16 port);
int serial_up(void);
void serial_putc(char c); /* queued: serial_kick sends */
void serial_kick(void);
void serial_irq(void);
void serial_poll(void);
void serial_sync(void); /* from a panic or power-off: everything out, and unqueued from then */
int serial_getc(void); /* -1 when nothing waits */
int serial_ready(void);
void serial_drain(void);
void debug_dump(void); /* debug.c: on Ctrl-\ from the console */
void serial_irq_on(void);
void ioapic_init(void);
void console_input(void);
extern int console_irq; /* the console's interrupts on: readers sleep until input */
i64 ioapic_console_line(void);
i64 ioapic_console_remap(u64 entry);
__attribute__((noreturn)) void panic(const char *fmt, ...);

static inline void outb(u16 port, u8 v) { __asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port)); }
static inline void outw(u16 port, u16 v) { __asm__ volatile("outw %0, %1" ::"a"(v), "Nd"(port)); }
static inline void outl(u16 port, u32 v) { __asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port)); }
static inline u8 inb(u16 port) { u8 v; __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline u16 inw(u16 port) { u16 v; __asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline u32 inl(u16 port) { u32 v; __asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port)); return v; }
static inline u64 rdtsc(void) { u32 lo, hi; __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi)); return (u64)hi << 32 | lo; }
static inline u64 rdmsr(u32 msr) { u32 lo, hi; __asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr)); return (u64)hi << 32 | lo; }
static inline void wrmsr(u32 msr, u64 v) { __asm__ volatile("wrmsr" ::"c"(msr), "a"((u32)v), "d"((u32)(v >> 32))); }
static inline u64 read_cr2(void) { u64 v; __asm__ volatile("mov %%cr2, %0" : "=r"(v)); return v; }
static inline void invlpg(u64 va) { __asm__ volatile("invlpg (%0)" ::"r"(va) : "memory"); }
static inline void cpuid(u32 leaf, u32 sub, u32 r[4]) {
	__asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}
static inline volatile u32 *mmio32(u64 pa) { return (volatile u32 *)pa; }

/* boot.c */
extern char boot_cmdline[];

/*
 * What a boot protocol hands over, filled by pvh.c or multiboot.c from
 * the loader's own structures so that boot_main does not care which one
 * started the shim. Everything is copied into the shim (the loader's
 * structures live in memory that becomes free RAM) except the module,
 * which boot_main reserves.
 */
#define BOOT_PVH 1       /* Xen's PVH start_info: QEMU -kernel */
#define BOOT_MULTIBOOT2 2 /* Multiboot2: GRUB's multiboot2 and module2 */
#define BOOT_MAXMEM 128
struct boot_mem { u64 addr, size; u32 type, reserved; }; /* type 1: RAM (E820, ACPI 15) */
struct bootinfo {
	const char *loader;     /* what started the shim, for messages */
	const char *cmdline;    /* in the loader's memory: boot_main copies it first */
	u64 mod_start, mod_size; /* the first module: /init */
	u64 rsdp;               /* the ACPI RSDP's physical address; 0: look for it */
	u32 nmem;
	struct boot_mem mem[BOOT_MAXMEM];
};
void pvh_parse(u32 info_pa, struct bootinfo *bi);
const struct boot_mem *boot_memmap(u32 *n); /* boot.c: the loader's map, kept */
void multiboot2_parse(u32 magic, u32 info_pa, struct bootinfo *bi);

/* mm.c: physical pages, the page tables, the Go process's mappings. */
#define IDENT_MIN (64UL << 10)   /* [0, 64 KiB) stays unmapped: nil dereferences fault */
extern u64 ident_top;            /* physical memory is identity mapped below this */
void mm_add_ram(u64 start, u64 end);
void mm_reserve(u64 start, u64 end);
u64 page_alloc(void);            /* one zeroed 4 KiB page, physical = virtual */
void page_free(u64 pa);
u64 contig_alloc(u64 bytes, u64 align); /* physically contiguous, zeroed; 0 when none */
u64 mm_phys(u64 va);
void mm_init_paging(u64 ram_top);
void mm_unmap_low(void);
void mm_map_image(u64 va, u64 pa, u64 len); /* va's pages onto pa's, not identity */
void mm_write(u64 va, const u8 *src, u64 n); /* at va, in fresh pages; NULL src: zeros */
int mm_zero_lazily(u64 va, u64 len);         /* whole pages zeroed on first touch; 0 when taken */
void mm_flush_tlb(void);                     /* after the two above */
u64 mm_free_bytes(void);
#define PROT_READ 1
#define PROT_WRITE 2
#define PROT_EXEC 4
i64 sys_mmap(u64 addr, u64 len, u64 prot, u64 flags, i64 fd, u64 off);
i64 sys_munmap(u64 addr, u64 len);
i64 sys_madvise(u64 addr, u64 len, u64 advice);
int vma_add_fixed(u64 start, u64 end, int prot);
int user_ok(u64 addr, u64 len, int write); /* faults in what is missing; 0 on success */
int page_fault(u64 addr, u64 err);          /* 0 resolved, else the si_code */
u64 mm_main_stack(void);

/* time.c */
void time_init(void);
u64 now_ns(void);
u64 tsc_ns(u64 ticks);
u64 realtime_offset_ns(void);
void timer_arm(u64 deadline_ns); /* 0: no timer */
void lapic_eoi(void);
u32 lapic_id(void);
int lapic_x2apic(void); /* 1: x2APIC mode */
extern int x2apic_wanted;
extern int hpet_wanted; /* metal.clock=hpet */

/* console.c: the console's UART, a 16550 at an I/O port. */
struct console {
	u16 port;
	u32 baud;
	int isa_irq;      /* its ISA IRQ (the MADT maps it to a GSI); -1: none */
	i64 gsi;          /* its global system interrupt, when firmware names it; -1: none */
	const char *name; /* ttyS0-ttyS3, or uart */
	const char *by;   /* what chose it */
};
extern struct console console;
void console_port(struct console *c, u16 port);
void console_choose(const char *cmdline, u64 rsdp);

/* acpi.c */
void acpi_init(u64 rsdp);
u64 acpi_find_rsdp(u64 given);
int acpi_spcr(u64 rsdp, struct console *c);
u64 acpi_rsdp(void);
u32 acpi_isa_gsi(u32 irq);
u32 acpi_pm_timer_port(void);
u64 acpi_hpet_base(void); /* 0: no HPET table */
int acpi_pm_timer_32bit(void);
__attribute__((noreturn)) void acpi_poweroff(void);
__attribute__((noreturn)) void acpi_reset(void);

/* thread.c: threads, the scheduler, futexes and the other waits. */
enum { T_FREE, T_RUNNABLE, T_BLOCKED, T_DEAD };
#define FPU_AREA 1024 /* x87, SSE and AVX state take 832 bytes in XSAVE's standard form */
extern u64 fpu_size;  /* bytes of FPU state that fx_save writes: 512, or XSAVE's size */
enum { W_NONE, W_FUTEX, W_SLEEP, W_EPOLL, W_CONSOLE };
struct thread {
	int tid;
	int state;
	u64 kstack_top;
	u64 fs_base;
	u64 blocked, pending;     /* signal masks, bit sig-1 */
	u64 ss_sp, ss_size;       /* sigaltstack */
	int ss_flags;
	int wait;                 /* W_*, while T_BLOCKED */
	u64 wait_addr;            /* futex word, or the epoll event array */
	u64 wait_arg;             /* epoll: fd and max events */
	u64 deadline;             /* ns, 0: none */
	u64 clear_tid;            /* CLONE_CHILD_CLEARTID */
	u64 last_nr;              /* the last system call, for debug_dump */
	u64 blocked_at, woken_at, wakes; /* ns since boot, and how many wakes */
	u8 fx[FPU_AREA] __attribute__((aligned(64))); /* XSAVE (or FXSAVE) area, SDM vol 1 13.4 */
};
static inline struct regs *frame_of(struct thread *t) { return (struct regs *)(t->kstack_top - sizeof(struct regs)); }
void threads_init(void);
void thread_start(struct thread *t);
struct thread *thread_new(void);
struct thread *thread_by_tid(int tid);
void block(struct thread *t, int wait, u64 deadline);
void wake(struct thread *t, i64 rax);
void need_resched(void);
void timer_fired(void);
void time_refine(u64 now_ns);
struct regs *schedule(void);
i64 sys_clone(struct regs *r);
void thread_exit(struct thread *t);
i64 futex_wait(struct thread *t, u64 addr, u32 val, u64 deadline);
i64 futex_wake(u64 addr, int n);
void fpu_init(void);
void fx_save(u8 *area);
int fx_restore(u8 *area); /* -1: not a state this CPU can load */
struct thread *threads_table(int *n);

/* signal.c */
#define SIGILL 4
#define SIGTRAP 5
#define SIGABRT 6
#define SIGFPE 8
#define SIGKILL 9
#define SIGSEGV 11
#define SIGSTOP 19
#define SIGURG 23
i64 sys_rt_sigaction(int sig, u64 act, u64 oact, u64 size);
i64 sys_rt_sigprocmask(struct thread *t, int how, u64 set, u64 oset, u64 size);
i64 sys_sigaltstack(struct thread *t, struct regs *r, u64 ss, u64 oss);
i64 sys_rt_sigreturn(struct thread *t, struct regs *r);
i64 signal_send(struct thread *t, int sig);
void signal_fault(struct thread *t, struct regs *r, int sig, int code, u64 addr);
void signal_deliver_pending(struct thread *t, struct regs *r);

/* syscall.c, fs.c */
void do_syscall(struct thread *t, struct regs *r);
extern int strace;
i64 rdrand_fill(u64 buf, u64 n);
i64 metal_call(u64 nr, u64 a0, u64 a1);
int irq_device(u64 vector); /* 1 when a device interrupt was counted */
i64 fs_call(struct thread *t, struct regs *r, int nr, int *handled);
void fs_init(void);
void epoll_event_ready(void);
void console_readable(void);
int fs_is_eventfd(i64 fd);
void eventfd_signal(int fd); /* adds one, as a write of 1 does */
void irq_fd_closed(int fd);
void fs_dump(void);
void irq_dump(void);
void timer_dump(void);

/* trap.c; the counters print at power-off (stats_print). */
struct stats { u64 syscalls, clock_gettime, timer_irqs, device_irqs, page_faults, switches, idle_ns, timer_writes; };
extern struct stats stats;
void stats_print(void);

struct regs *trap(struct regs *r);
void trap_init(void);
__attribute__((noreturn)) void fatal(struct regs *r, const char *why);
void dump_regs(struct regs *r);

#endif
