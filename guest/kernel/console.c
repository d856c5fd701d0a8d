/*
 * Console (COM1 THR) and the few memory helpers the compiler may call.
 * The VMM's 16550 always reports THR empty, so the kernel never reads LSR.
 */
#include "kernel.h"

void kputc(char c)
{
	outb(REPRISE_PORT_SERIAL, (uint8_t)c);
}

/* `rep outsb`: KVM batches string port output (one exit per run of bytes,
 * io.count > 1) instead of one exit per byte. */
void kwrite(const char *s, uint64_t n)
{
	__asm__ volatile("cld; rep outsb"
			 : "+S"(s), "+c"(n)
			 : "d"(REPRISE_PORT_SERIAL)
			 : "memory");
}

void kputs(const char *s)
{
	while (*s)
		kputc(*s++);
}

void kputhex(uint64_t v)
{
	char b[19];
	int i = 18;
	b[i] = 0;
	do {
		b[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	b[--i] = 'x';
	b[--i] = '0';
	kputs(&b[i]);
}

void kputdec(uint64_t v)
{
	char b[21];
	int i = 20;
	b[i] = 0;
	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	kputs(&b[i]);
}

/* The kernel's own copies (made local to the kernel object by the Makefile,
 * so they never clash with the user library's). Every kernel instruction is
 * emulated here, so they move 8 bytes per iteration when they can. */
void *memset(void *d, int c, size_t n)
{
	uint8_t *p = d;
	if ((((uintptr_t)p | n) & 7) == 0 && c == 0) {
		for (uint64_t *w = d; n; n -= 8)
			*w++ = 0;
		return d;
	}
	while (n--)
		*p++ = (uint8_t)c;
	return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
	uint8_t *p = d;
	const uint8_t *q = s;
	if ((((uintptr_t)p | (uintptr_t)q | n) & 7) == 0) {
		uint64_t *w = d;
		const uint64_t *v = s;
		for (; n; n -= 8)
			*w++ = *v++;
		return d;
	}
	while (n--)
		*p++ = *q++;
	return d;
}
