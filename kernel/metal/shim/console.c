/*
 * console.c: which UART is the console. The last console= word of the
 * command line that names a serial port wins, as Linux's
 * console=ttyS1,115200 or its earlycon form console=uart,io,0x2f8,115200;
 * without one, the UART firmware redirects its own console to, as its
 * SPCR table says (servers put IPMI serial-over-LAN there, often on
 * COM2); without that, COM1. The shim drives 16550s at I/O ports only.
 */
#include "shim.h"

struct console console = {.port = 0x3f8, .baud = 115200, .isa_irq = 4, .gsi = -1, .name = "ttyS0", .by = "default"};

/* The PC's four serial ports: I/O base and ISA IRQ. */
static const struct {
	u16 port;
	int irq;
} pc_ports[4] = {{0x3f8, 4}, {0x2f8, 3}, {0x3e8, 4}, {0x2e8, 3}};

static const char *tty_names[4] = {"ttyS0", "ttyS1", "ttyS2", "ttyS3"};

/* console_port fills c's port, IRQ and name for the UART at port: one of
 * the PC's four, or another with no interrupt known (input polled). */
void console_port(struct console *c, u16 port)
{
	c->port = port;
	c->isa_irq = -1;
	c->gsi = -1;
	c->name = "uart";
	for (int i = 0; i < 4; i++)
		if (pc_ports[i].port == port) {
			c->isa_irq = pc_ports[i].irq;
			c->name = tty_names[i];
		}
}

/* number reads a decimal or 0x-prefixed hexadecimal number from *s,
 * moving *s past it; -1 when there are no digits. */
static i64 number(const char **s)
{
	const char *p = *s;
	int base = 10;
	if (p[0] == '0' && p[1] == 'x')
		base = 16, p += 2;
	i64 v = 0;
	const char *start = p;
	for (;; p++) {
		int d;
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else
			break;
		if (v > 0xffffffffL)
			return -1;
		v = v * base + d;
	}
	if (p == start)
		return -1;
	*s = p;
	return v;
}

/* serial_word reads one console= value: 1 when it names a serial port
 * (filling c), 0 when it names something else (tty0, the screen), -1
 * when it is a serial port the shim cannot use (said). */
static int serial_word(const char *v, u64 n, struct console *c)
{
	const char *p = v, *end = v + n;
	i64 port;
	if (n > 4 && !memcmp(p, "ttyS", 4)) {
		p += 4;
		i64 i = number(&p);
		if (i < 0 || i > 3) {
			kprintf("metal: console=%s: the shim knows ttyS0 to ttyS3 only\n", v);
			return -1;
		}
		console_port(c, pc_ports[i].port);
	} else if ((n > 8 && !memcmp(p, "uart,io,", 8)) || (n > 12 && !memcmp(p, "uart8250,io,", 12))) {
		p += p[4] == ',' ? 8 : 12;
		if ((port = number(&p)) < 0 || port > 0xfff8) {
			kprintf("metal: console=%s: no I/O port the shim can use\n", v);
			return -1;
		}
		console_port(c, (u16)port);
	} else {
		return 0;
	}
	c->baud = 115200;
	if (p < end && *p == ',') {
		p++;
		i64 b = number(&p);
		if (b <= 0 || b > 115200 || 115200 % b) {
			kprintf("metal: console=%s: the baud rate must divide 115200; 115200 it is\n", v);
			b = 115200;
		}
		c->baud = (u32)b;
	}
	c->by = "the command line";
	return 1;
}

/* cmdline_console finds the command line's last console= that names a
 * serial port; 1 when there is one (in c). */
static int cmdline_console(const char *cmdline, struct console *c)
{
	int found = 0;
	for (const char *w = cmdline; *w;) {
		while (*w == ' ')
			w++;
		u64 n = 0;
		while (w[n] && w[n] != ' ')
			n++;
		if (n > 8 && !memcmp(w, "console=", 8)) {
			/* A copy, ended, for the messages. */
			char v[64];
			u64 m = n - 8 < sizeof v - 1 ? n - 8 : sizeof v - 1;
			memcpy(v, w + 8, m);
			v[m] = 0;
			struct console t = *c;
			if (serial_word(v, m, &t) > 0) {
				*c = t;
				found = 1;
			}
		}
		w += n;
	}
	return found;
}

/* console_choose picks the console as the top of this file says and,
 * when it is not COM1 at 115200 baud, where the shim starts, moves there:
 * the last line on COM1 says where to look. A port where no UART answers
 * is not moved to. */
void console_choose(const char *cmdline, u64 rsdp)
{
	struct console c = console;
	if (!cmdline_console(cmdline, &c))
		acpi_spcr(rsdp, &c);
	if (c.port == console.port && c.baud == console.baud) {
		console = c;
		return;
	}
	if (!serial_present(c.port)) {
		kprintf("metal: no UART answers at %s (I/O 0x%x), which %s names: the console stays on %s\n",
			c.name, c.port, c.by, console.name);
		return;
	}
	kprintf("metal: the console moves to %s at I/O 0x%x, %u baud, by %s\n", c.name, c.port, c.baud, c.by);
	console = c;
	serial_init(c.port, c.baud);
	kprintf("\nmetal: shim started; console %s at I/O 0x%x, %u baud, by %s\n", c.name, c.port, c.baud, c.by);
}
