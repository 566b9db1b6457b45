/* lib.c: memory helpers, the serial console and a small printf. */
#include "shim.h"
#include <stdarg.h>

/*
 * gcc emits calls to these for struct copies. The bulk moves eight bytes
 * at a time in an unrolled loop of plain moves, not a rep prefix: under
 * QEMU's TCG each step of a rep costs tens of nanoseconds whatever its
 * width, and copying /init's 15 MB took 530 ms a byte at a time and
 * 150 ms eight at a time; the loop takes a few. The attribute keeps gcc
 * from turning the loops back into calls to memcpy and memset.
 */
#define NO_LIBCALL __attribute__((optimize("no-tree-loop-distribute-patterns")))

NO_LIBCALL void *memset(void *d, int c, u64 n)
{
	u8 *p = d;
	u64 v = (u8)c * 0x0101010101010101UL;
	for (; n && ((u64)p & 7); n--)
		*p++ = (u8)c;
	for (; n >= 64; n -= 64, p += 64) {
		u64 *q = (u64 *)p;
		q[0] = v; q[1] = v; q[2] = v; q[3] = v;
		q[4] = v; q[5] = v; q[6] = v; q[7] = v;
	}
	for (; n; n--)
		*p++ = (u8)c;
	return d;
}

NO_LIBCALL void *memcpy(void *d, const void *s, u64 n)
{
	u8 *p = d;
	const u8 *q = s;
	for (; n >= 64; n -= 64, p += 64, q += 64) {
		u64 a0, a1, a2, a3, a4, a5, a6, a7;
		__builtin_memcpy(&a0, q, 8); /* unaligned loads, as single moves */
		__builtin_memcpy(&a1, q + 8, 8);
		__builtin_memcpy(&a2, q + 16, 8);
		__builtin_memcpy(&a3, q + 24, 8);
		__builtin_memcpy(&a4, q + 32, 8);
		__builtin_memcpy(&a5, q + 40, 8);
		__builtin_memcpy(&a6, q + 48, 8);
		__builtin_memcpy(&a7, q + 56, 8);
		__builtin_memcpy(p, &a0, 8);
		__builtin_memcpy(p + 8, &a1, 8);
		__builtin_memcpy(p + 16, &a2, 8);
		__builtin_memcpy(p + 24, &a3, 8);
		__builtin_memcpy(p + 32, &a4, 8);
		__builtin_memcpy(p + 40, &a5, 8);
		__builtin_memcpy(p + 48, &a6, 8);
		__builtin_memcpy(p + 56, &a7, 8);
	}
	for (; n; n--)
		*p++ = *q++;
	return d;
}

int memcmp(const void *a, const void *b, u64 n)
{
	const u8 *x = a, *y = b;
	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

u64 strlen(const char *s)
{
	u64 n = 0;
	while (s[n])
		n++;
	return n;
}

/*
 * The console is a 16550 UART at an I/O port: COM1 (0x3F8) from the
 * start, then the one console.c picks. 8N1, FIFOs on. Register offsets
 * are the 16550's: 0 data/DLL, 1 IER/DLM, 2 FCR, 3 LCR, 4 MCR, 5 LSR,
 * 7 SCR. uart is 0 when none answers: a machine without a serial port
 * (most NUCs) reads all ones there, which as LSR says a byte is always
 * waiting, and the console shell would spin on 0xff forever.
 */
static u16 uart;
static u8 ier;    /* what IER holds: RX (bit 0) and the transmitter (bit 1) */
static int tx_irq; /* the transmitter's interrupt drains the output ring */

static void set_ier(u8 v)
{
	if (v != ier)
		outb(uart + 1, ier = v);
}

/* serial_up says whether the console has a UART. */
int serial_up(void) { return uart != 0; }

/* serial_present says whether a 16550 answers at port: its LSR is not
 * all ones and its scratch register keeps what is written to it. */
int serial_present(u16 port)
{
	if (inb(port + 5) == 0xff)
		return 0;
	u8 old = inb(port + 7);
	outb(port + 7, 0x5a);
	int ok = inb(port + 7) == 0x5a;
	outb(port + 7, old);
	return ok;
}

/* serial_init makes the UART at port the console, at baud (0: at the
 * rate firmware set, its divisor left alone); with none there, the
 * console writes nothing and reads nothing. It returns whether one is. */
int serial_init(u16 port, u32 baud)
{
	uart = serial_present(port) ? port : 0;
	if (!uart)
		return 0;
	outb(uart + 1, ier = 0x00); /* no UART interrupts until the IOAPIC routes them */
	if (baud) {
		u32 div = 115200 / baud; /* the 1.8432 MHz clock over 16 */
		outb(uart + 3, 0x80);    /* DLAB on to set the divisor */
		outb(uart + 0, (u8)div);
		outb(uart + 1, (u8)(div >> 8));
	}
	outb(uart + 3, 0x03); /* 8N1, DLAB off */
	outb(uart + 2, 0x07); /* FIFOs on and cleared */
	outb(uart + 4, 0x03); /* DTR, RTS */
	return 1;
}

/* serial_irq_on asks the UART for an interrupt when a byte arrives (IER
 * bit 0); OUT2 (MCR bit 3) connects its interrupt line on PC boards.
 * From then on output goes through the ring its transmitter's interrupt
 * drains. */
void serial_irq_on(void)
{
	if (!uart)
		return;
	outb(uart + 4, 0x0b);
	set_ier(0x01);
	tx_irq = 1;
}

/*
 * Console input waits in a ring that the UART's interrupt fills: the line is
 * edge-triggered through the I/O APIC, and the 16550 raises it again only
 * after its FIFO was read, so the interrupt must empty the FIFO whether or
 * not a Go thread reads. Ctrl-\ (0x1c) never reaches Go: it prints the
 * shim's state (debug_dump), which works while Go is stuck.
 */
#define RXRING 512
static u8 rxring[RXRING];
static u32 rx_head, rx_tail; /* next to read, next to write; free-running */

void serial_drain(void)
{
	for (int i = 0; uart && i < 4096 && (inb(uart + 5) & 0x01); i++) { /* LSR bit 0: data ready */
		u8 c = inb(uart);
		if (c == 0x1c) {
			debug_dump();
			continue;
		}
		if (rx_tail - rx_head < RXRING)
			rxring[rx_tail++ % RXRING] = c;
	}
}

int serial_ready(void)
{
	serial_drain();
	return rx_tail != rx_head;
}

int serial_getc(void)
{
	serial_drain();
	if (rx_head == rx_tail)
		return -1;
	return rxring[rx_head++ % RXRING];
}

/*
 * Output goes through a ring the UART's transmitter drains: a writer
 * queues its bytes and returns, and the transmitter-empty interrupt
 * (IER bit 1) refills the 16-byte FIFO each time it runs dry. Waiting
 * on the transmitter instead cost 87 us a character at 115200 baud, 143
 * ms over the 1,650 characters a boot prints before the network is up,
 * every line a stall of the CPU the packet path runs on. Before the
 * console's interrupt is routed (ioapic.c), and from serial_sync on,
 * bytes go out one by one as the transmitter takes them.
 */
#define TXRING 16384
#define UART_FIFO 16
static u8 txring[TXRING];
static u32 tx_head, tx_tail; /* next to send, next to fill; free-running */

/* tx_wait waits until the transmitter can take bytes (LSR bit 5, its
 * FIFO empty). Bounded, so a UART that stops cannot hang the machine. */
static void tx_wait(void)
{
	for (int i = 0; i < 100000 && !(inb(uart + 5) & 0x20); i++)
		;
}

/* tx_fill moves a FIFO's worth from the ring to the UART when its
 * transmitter is empty, and keeps its interrupt on while bytes wait. */
static void tx_fill(void)
{
	if (tx_head != tx_tail && (inb(uart + 5) & 0x20))
		for (int i = 0; i < UART_FIFO && tx_head != tx_tail; i++)
			outb(uart, txring[tx_head++ % TXRING]);
	set_ier(tx_head != tx_tail ? ier | 0x02 : ier & ~0x02);
}

/* serial_putc queues c; serial_kick starts the transmitter on what is
 * queued. A full ring is drained the slow way. */
void serial_putc(char c)
{
	if (!uart)
		return;
	if (!tx_irq) {
		tx_wait();
		outb(uart, c);
		return;
	}
	while (tx_tail - tx_head >= TXRING) {
		tx_wait();
		tx_fill();
	}
	txring[tx_tail++ % TXRING] = c;
}

void serial_kick(void)
{
	if (uart && tx_irq && !(ier & 0x02))
		tx_fill();
}

/* serial_irq serves the UART's interrupt: received bytes and an empty
 * transmitter, until IIR says nothing is pending (bit 0), so that its
 * line falls and the next event is an edge the I/O APIC sees. */
void serial_irq(void)
{
	for (int i = 0; uart && i < 16 && !(inb(uart + 2) & 1); i++) {
		serial_drain();
		tx_fill();
	}
}

/* serial_poll serves the UART when output waits: the scheduler calls it,
 * so that queued bytes go out even if an edge of its line was missed. */
void serial_poll(void)
{
	if (tx_head != tx_tail)
		serial_irq();
}

/* serial_sync sends what is queued and every later byte as the
 * transmitter takes it: a panic, a fatal trap and power-off must not
 * leave their last words in a ring nobody drains. */
void serial_sync(void)
{
	if (!uart)
		return;
	tx_irq = 0;
	set_ier(ier & ~0x02);
	while (tx_head != tx_tail) {
		tx_wait();
		outb(uart, txring[tx_head++ % TXRING]);
	}
}

static void puts_n(const char *s, u64 n)
{
	for (u64 i = 0; i < n; i++) {
		if (s[i] == '\n')
			serial_putc('\r');
		serial_putc(s[i]);
	}
}

/* kprintf understands %s %c %d %u %x %p with an optional 0, width and l. */
static void vkprintf(const char *f, va_list ap)
{
	char buf[32];
	for (; *f; f++) {
		if (*f != '%') {
			puts_n(f, 1);
			continue;
		}
		f++;
		char pad = ' ';
		int width = 0, lng = 0;
		if (*f == '0')
			pad = '0', f++;
		while (*f >= '0' && *f <= '9')
			width = width * 10 + (*f++ - '0');
		while (*f == 'l')
			lng = 1, f++;
		u64 v;
		int base = 10, neg = 0;
		switch (*f) {
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			puts_n(s, strlen(s));
			continue;
		}
		case 'c':
			buf[0] = (char)va_arg(ap, int);
			puts_n(buf, 1);
			continue;
		case 'd': {
			i64 x = lng ? va_arg(ap, i64) : va_arg(ap, int);
			neg = x < 0;
			v = neg ? -(u64)x : (u64)x;
			break;
		}
		case 'u':
			v = lng ? va_arg(ap, u64) : va_arg(ap, u32);
			break;
		case 'p':
			lng = 1, pad = '0', width = 16;
			/* fall through */
		case 'x':
			v = lng ? va_arg(ap, u64) : va_arg(ap, u32);
			base = 16;
			break;
		default:
			puts_n(f - 1, 2);
			continue;
		}
		int n = 0;
		do {
			buf[n++] = "0123456789abcdef"[v % base];
			v /= base;
		} while (v && n < 30);
		if (neg)
			buf[n++] = '-';
		while (n < width && n < 30)
			buf[n++] = pad;
		for (int i = n - 1; i >= 0; i--)
			puts_n(&buf[i], 1);
	}
}

void kprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vkprintf(fmt, ap);
	va_end(ap);
	serial_kick();
}

void panic(const char *fmt, ...)
{
	va_list ap;
	serial_sync();
	kprintf("metal: panic: ");
	va_start(ap, fmt);
	vkprintf(fmt, ap);
	va_end(ap);
	kprintf("\n");
	acpi_poweroff();
}
