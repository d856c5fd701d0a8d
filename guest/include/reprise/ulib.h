/*
 * The reprise guest kit's user library (CPL3): system calls, formatting,
 * strings, threads, mutexes, sleep, clocks, checksums, arguments, UDP.
 *
 * Probe points for the VMM's lock tools (replay probes by symbol):
 *   mutex_lock(m), mutex_unlock(m), mutex_trylock(m) -> 0 | EBUSY,
 *   mutex_timedlock(m, ns) -> 0 | ETIMEDOUT, mutex_init(m, name):
 *   the lock address is the first argument (rdi), the result is in rax.
 *   They are out-of-line functions (never inlined), fast path included.
 */
#ifndef REPRISE_ULIB_H
#define REPRISE_ULIB_H

#include <stdint.h>
#include <stddef.h>
#include <stdarg.h>
#include <reprise/abi.h>
#include <reprise/fnv.h>

#define UNUSED __attribute__((unused))
#define NOINLINE __attribute__((noinline))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- system calls: `ud2`, rax = number, args rdi rsi rdx r10 r8 */
static inline long sys0(long nr)
{
	long r;
	__asm__ volatile("ud2" : "=a"(r) : "a"(nr) : "memory");
	return r;
}

static inline long sys1(long nr, long a)
{
	long r;
	__asm__ volatile("ud2" : "=a"(r) : "a"(nr), "D"(a) : "memory");
	return r;
}

static inline long sys2(long nr, long a, long b)
{
	long r;
	__asm__ volatile("ud2" : "=a"(r) : "a"(nr), "D"(a), "S"(b) : "memory");
	return r;
}

static inline long sys3(long nr, long a, long b, long c)
{
	long r;
	__asm__ volatile("ud2" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c) : "memory");
	return r;
}

__attribute__((noreturn)) static inline void sys_exit(int status)
{
	sys1(SYS_EXIT, status);
	__builtin_unreachable();
}
static inline long sys_write(const void *buf, size_t n) { return sys2(SYS_WRITE, (long)buf, (long)n); }
static inline long sys_yield(void) { return sys0(SYS_YIELD); }
static inline long sys_sleep_ns(uint64_t ns) { return sys1(SYS_SLEEP_NS, (long)ns); }
static inline long sys_futex_wait(volatile uint32_t *a, uint32_t expected, uint64_t timeout_ns)
{
	return sys3(SYS_FUTEX_WAIT, (long)a, expected, (long)timeout_ns);
}
static inline long sys_futex_wake(volatile uint32_t *a, long n) { return sys2(SYS_FUTEX_WAKE, (long)a, n); }
static inline uint64_t sys_clock_ns(void) { return (uint64_t)sys0(SYS_CLOCK_NS); }
static inline long sys_trace(uint32_t kind, uint64_t a, uint64_t b) { return sys3(SYS_TRACE, kind, (long)a, (long)b); }
static inline int gettid(void) { return (int)sys0(SYS_GETTID); }
static inline long sys_bench(long op, long n) { return sys2(SYS_BENCH, op, n); }
static inline void bench_mark(long id) { sys_bench(REPRISE_BENCH_MARK, id); }
static inline long sys_getrandom(void *buf, uint64_t n) { return sys2(SYS_GETRANDOM, (long)buf, (long)n); }
/* Disk: count (1..REPRISE_DISK_MAX_SECTORS) sectors of REPRISE_DISK_SECTOR
 * bytes at sector; the calling thread blocks until the request completes.
 * 0, -REPRISE_EIO (the device failed it) or -REPRISE_EINVAL (bad count,
 * range or buffer, or no disk). */
static inline long sys_disk_read(uint64_t sector, uint32_t count, void *buf)
{
	return sys3(SYS_DISK_READ, (long)sector, count, (long)buf);
}
static inline long sys_disk_write(uint64_t sector, uint32_t count, const void *buf)
{
	return sys3(SYS_DISK_WRITE, (long)sector, count, (long)buf);
}
static inline uint64_t sys_disk_sectors(void) { return (uint64_t)sys0(SYS_DISK_SECTORS); }
/* NIC (the raw device; lib/net.c's UDP endpoint is the usual way in):
 * setup: both rings (REPRISE_NIC_RING descriptors each) in user memory ->
 * 0 | -REPRISE_EINVAL | -REPRISE_EIO (no NIC); rxtail/txtail: 0 | -REPRISE_EIO;
 * wait: the NIC interrupt count, at once if != seen, else after the next
 * NIC interrupt; -REPRISE_EAGAIN if another thread already waits. */
static inline long sys_net_setup(volatile struct reprise_nic_desc *rx, volatile struct reprise_nic_desc *tx)
{
	return sys2(SYS_NET_SETUP, (long)rx, (long)tx);
}
static inline long sys_net_rxtail(uint32_t index) { return sys1(SYS_NET_RXTAIL, index); }
static inline long sys_net_txtail(uint32_t index) { return sys1(SYS_NET_TXTAIL, index); }
static inline long sys_net_wait(uint64_t seen) { return sys1(SYS_NET_WAIT, (long)seen); }

/* ---- clocks */
extern volatile const struct reprise_clock reprise_clock_page; /* at REPRISE_CLOCK */
/* Coarse: guest ns at the last timer tick (free, deterministic). */
static inline uint64_t clock_coarse_ns(void) { return reprise_clock_page.ns; }
static inline uint64_t clock_ticks(void) { return reprise_clock_page.ticks; }
/* Exact: a hypercall through the kernel (an exit, value logged). */
static inline uint64_t clock_ns(void) { return sys_clock_ns(); }

/* ---- boot info (copied by the kernel into user memory) */
extern struct reprise_bootinfo reprise_uboot;
static inline uint32_t timer_hz(void) { return reprise_uboot.timer_hz; }

/* ---- threads */
typedef long (*thread_fn)(void *arg);
int thread_create(thread_fn fn, void *arg);       /* tid, or < 0 */
long thread_join(int tid);                        /* fn's return value */
__attribute__((noreturn)) void thread_exit(long value);
static inline void yield(void) { sys_yield(); }
void sleep_ns(uint64_t ns);
static inline void sleep_ms(uint64_t ms) { sleep_ns(ms * 1000000ULL); }

/* ---- mutex: Drepper's 3-state futex mutex (0 free, 1 locked, 2 locked with
 * waiters); the fast path is one cmpxchg, the futex only when contended.
 * Each mutex counts, for itself, acquisitions and contended acquisitions
 * (lock found held at the first attempt); updated while held, so free. */
struct mutex {
	volatile uint32_t state;
	uint32_t pad;
	uint64_t acquired;       /* successful lock / trylock / timedlock */
	uint64_t contended;      /* of which found held at the first attempt */
	const char *name;
};
#define MUTEX_INIT(nm) { 0, 0, 0, 0, nm }
#define EBUSY 16
void mutex_init(struct mutex *m, const char *name);
void mutex_lock(struct mutex *m);
void mutex_unlock(struct mutex *m);
int mutex_trylock(struct mutex *m);               /* 0 or EBUSY */
int mutex_timedlock(struct mutex *m, uint64_t ns); /* 0 or REPRISE_ETIMEDOUT */

/* ---- condition-variable-free helpers */
/* Barrier for n threads (futex on a generation counter). */
struct barrier {
	volatile uint32_t gen;
	volatile uint32_t count;
	uint32_t n;
};
void barrier_init(struct barrier *b, uint32_t n);
void barrier_wait(struct barrier *b);
/* One-shot event: event_wait blocks until event_set. */
struct event {
	volatile uint32_t set;
};
void event_set(struct event *e);
void event_wait(struct event *e);

/* Always inlined: an outlined copy would be instrumented for the branch
 * counter, and an interrupt placed at its basic block would fall between a
 * lock function's entry and its atomic operation (lib/thread.c). */
#define ATOMIC static inline __attribute__((always_inline))
ATOMIC uint32_t atomic_xchg32(volatile uint32_t *p, uint32_t v)
{
	__asm__ volatile("xchgl %0, %1" : "+r"(v), "+m"(*p) : : "memory");
	return v;
}
ATOMIC uint32_t atomic_cmpxchg32(volatile uint32_t *p, uint32_t old, uint32_t nw)
{
	__asm__ volatile("lock cmpxchgl %2, %1" : "+a"(old), "+m"(*p) : "r"(nw) : "memory");
	return old;     /* the value found */
}
ATOMIC uint64_t atomic_add64(volatile uint64_t *p, uint64_t v)
{
	__asm__ volatile("lock xaddq %0, %1" : "+r"(v), "+m"(*p) : : "memory");
	return v;       /* the old value */
}
ATOMIC uint32_t atomic_add32(volatile uint32_t *p, uint32_t v)
{
	__asm__ volatile("lock xaddl %0, %1" : "+r"(v), "+m"(*p) : : "memory");
	return v;
}
#define barrier_compiler() __asm__ volatile("" ::: "memory")

/* ---- memory: a bump allocator over the heap the kernel handed over */
void *ualloc(size_t n);       /* 16-byte aligned, never freed; 0 if exhausted */

/* ---- strings */
void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
/* Parse an unsigned decimal or 0x-hex number; *ok = 0 on junk. */
uint64_t parse_u64(const char *s, int *ok);

/* ---- formatting: %d %i %u %x %X %lx %lu %ld %s %c %p %%, with width, '-' and
 * '0' flags and l/ll/z modifiers. printf writes the whole line with one
 * SYS_WRITE (so lines from different threads never interleave). */
#define PRINTF_BUF 512
int vsnprintf(char *buf, size_t n, const char *fmt, va_list ap);
int snprintf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int puts(const char *s);
/* "truth: " + formatted line (fmt without the prefix or the newline). */
void truth(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- UDP over the NIC (lib/net.c): one endpoint, 10.0.2.15:port, for one
 * thread. Peers are host processes: a datagram from one arrives from
 * 10.0.2.2:<its port>; one sent to port P goes to the host's 127.0.0.1:P. */
#define NET_BUF_SIZE    1536                 /* per RX/TX buffer */
#define NET_MAX_PAYLOAD 1472                 /* 1514 - Ethernet, IPv4, UDP headers */
struct net_stats {
	uint64_t rx_frames;      /* RX descriptors consumed */
	uint64_t rx_datagrams;   /* of which returned by net_recv */
	uint64_t rx_truncated;   /* of which cut to the caller's cap */
	uint64_t rx_malformed;   /* dropped: bad lengths, IP version, fragments */
	uint64_t rx_not_ours;    /* dropped: MAC, ethertype, protocol, addresses, port */
	uint64_t rx_bad_csum;    /* dropped: IP header or UDP checksum */
	uint64_t rx_posts;       /* SYS_NET_RXTAIL calls */
	uint64_t waits;          /* SYS_NET_WAIT returns */
	uint64_t tx_frames;      /* sent */
	uint64_t tx_not_done;    /* the device did not set DONE during TXTAIL */
};
/* 0, -REPRISE_EIO (no NIC), -REPRISE_ENOMEM, -EBUSY (already open). */
int net_open(uint16_t port);
/* Blocks for the next datagram to our port: its payload (at most cap bytes,
 * the rest dropped) into buf, the sender's port into *from_port (if not
 * 0); returns the bytes copied, or < 0 (-REPRISE_EINVAL: not open). */
long net_recv(uint16_t *from_port, void *buf, size_t cap);
/* One datagram to 10.0.2.2:to_port (len <= NET_MAX_PAYLOAD), sent when it
 * returns: len, or -REPRISE_EINVAL, -REPRISE_EIO. */
long net_send(uint16_t to_port, const void *payload, size_t len);
const struct net_stats *net_stats(void);

/* ---- the command line: "name key=val key=val positional ..." */
#define ARGS_MAX 16
struct args {
	const char *name;               /* first word */
	int n;
	struct {
		const char *key;        /* 0 for a positional word */
		const char *val;
	} a[ARGS_MAX];
	char buf[REPRISE_CMDLINE_MAX];
};
void args_parse(struct args *a, const char *cmdline);
uint64_t arg_u64(const struct args *a, const char *key, uint64_t def);
const char *arg_str(const struct args *a, const char *key, const char *def);
const char *arg_pos(const struct args *a, int i);   /* i-th positional word after name, or 0 */

#endif
