/* Guest kernel internals (CPL0). Not visible to user code. */
#ifndef REPRISE_KERNEL_H
#define REPRISE_KERNEL_H

#include <stdint.h>
#include <stddef.h>
#include <reprise/abi.h>
#include <reprise/trace.h>

#define MAX_THREADS  REPRISE_MAX_THREADS /* slot 0 is the idle thread */
#define KSTACK_SIZE  4096        /* per-thread kernel stack: frame + handler */
#define USTACK_SIZE  (64 * 1024) /* per-thread user stack */
#define NBUCKETS     64          /* futex hash buckets */

#define RFLAGS_IF    0x200
#define RFLAGS_USER  (0x2 | RFLAGS_IF)   /* IOPL 0, IF 1 */

#define unlikely(x)  __builtin_expect(!!(x), 0)
#define likely(x)    __builtin_expect(!!(x), 1)

/* Circular doubly linked list with a sentinel. */
struct link {
	struct link *next, *prev;
};

enum tstate { T_FREE, T_RUNNABLE, T_BLOCKED, T_ZOMBIE };

struct thread {
	struct link q;                 /* run queue / futex bucket (offset 0) */
	struct link sl;                /* sleep queue; sl.next == 0: not in it */
	struct reprise_frame *frame;   /* its frame: fixed, top of its kstack */
	uint64_t kstack_top;           /* for TSS.RSP0 */
	uint64_t deadline;             /* clock ns (sleep, futex timeout) */
	uint64_t futex;                /* address waited on, 0 if none */
	uint32_t tid;
	uint32_t state;
	uint32_t gen;                  /* slot reuse count: tid = gen*64 + slot */
	uint32_t slot;
	struct thread *joiner;
	uint64_t exit_value;
};

/* console.c */
void kputc(char c);
void kputs(const char *s);
void kputhex(uint64_t v);
void kputdec(uint64_t v);
void kwrite(const char *s, uint64_t n);

void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);

/* kernel.c */
__attribute__((noreturn)) void kexit(uint32_t status);
__attribute__((noreturn)) void kfault(struct reprise_frame *f, uint64_t cr2);

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;
	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

/* Hypercall: `out %eax, %dx` at REPRISE_PORT_HCALL, args rdi, rsi, r8. */
static inline uint64_t hcall(uint32_t nr, uint64_t a, uint64_t b, uint64_t c)
{
	register uint64_t r8 __asm__("r8") = c;
	uint64_t ret;
	__asm__ volatile("outl %%eax, %%dx"
			 : "=a"(ret)
			 : "a"((uint64_t)nr), "d"(REPRISE_PORT_HCALL), "D"(a), "S"(b), "r"(r8)
			 : "memory");
	return ret;
}

#endif
