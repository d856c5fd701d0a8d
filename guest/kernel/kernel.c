/*
 * The reprise guest kernel (CPL0): boot, traps, threads, round-robin
 * scheduling, sleep, futex, the disk and NIC drivers, system calls, trace
 * ring, fault reports.
 *
 * It is emulated instruction by instruction on the test machines (~0.35 µs
 * each), so the hot paths are kept short and O(1):
 *
 *  - every trap builds a struct reprise_frame on the current kernel stack
 *    (entry.S) and calls one of five C handlers, which return the frame to
 *    resume. A user thread's frame always sits at the top of its own kernel
 *    stack (the CPU switches to TSS.RSP0 = that top on a CPL3 trap), so a
 *    thread switch is "return the other thread's frame, set RSP0";
 *  - the kernel itself never blocks and always runs with IF=0: a blocking
 *    system call leaves its frame in place (result preset in frame->rax,
 *    overwritten by whoever wakes it) and returns another thread's frame;
 *  - run queue: FIFO list; sleep queue: list sorted by deadline (only its
 *    head is looked at per tick); futex waiters: 64 hashed FIFO buckets;
 *    disk: one request in flight, later callers on a FIFO queue;
 *  - the NIC driver moves no frames: user code owns the descriptor rings
 *    (lib/net.c); the kernel passes their addresses and the tails to the
 *    device, counts NIC interrupts and wakes the one thread waiting for one.
 *
 * Instruction counts of the hot paths: executed instructions from the
 * first instruction of the vector stub to iretq inclusive, counted along the
 * path in `objdump -d build/obj/reprise-kernel.o` (gcc 12 -O2). 39 of each
 * are the fixed trap overhead: stub 3 (push 0, push vector, jmp), save 17
 * (15 push, mov, call), resume 19 (jmp, mov, 15 pop, add, iretq).
 *   timer tick, nothing to do (run queue empty, no sleeper):       51
 *     (+3 when a sleeper is queued but not due)
 *   timer tick, round-robin switch (incl. the trace record):       86
 *   system call round trip, SYS_BENCH NOP:                         61
 *   system call round trip, SYS_GETTID:                            58
 *   SYS_YIELD with a switch:                                       94
 *   SYS_FUTEX_WAIT that blocks (no timeout) and switches:         120
 *   SYS_FUTEX_WAKE waking one waiter:                              90
 *   SYS_DISK_READ/WRITE that submits, blocks, switches to idle:   133
 *     (132 switching to another thread; 13 fewer when it only queues)
 *   disk IRQ (vector 0x22), owner to the run queue:                65
 *   disk IRQ in the idle loop, switch to the owner:                84
 *     (+22 either way when it submits the next queued request)
 *   SYS_NET_RXTAIL / SYS_NET_TXTAIL (one port write):              63
 *   SYS_NET_WAIT returning at once:                                62
 *   SYS_NET_WAIT that blocks, switches to idle:                   102
 *     (98 switching to another thread; 97 to idle with a sleeper queued)
 *   NIC IRQ (vector 0x23), no waiter:                              47
 *   NIC IRQ, the waiter to the run queue:                          58
 *   NIC IRQ in the idle loop, switch to the waiter:                75
 * At ~0.35 µs per emulated instruction, a switching tick costs ~30 µs and
 * a syscall ~21 µs on top of the ~32 µs CPL3 trap (measured with `bench
 * syscall`: ~51 µs per round trip).
 */
#include "kernel.h"

#define CLOCK ((volatile struct reprise_clock *)REPRISE_CLOCK)
#define SWBC  ((volatile struct reprise_swbc *)REPRISE_SWBC)
#define TSS_RSP0 (*(volatile uint64_t *)REPRISE_TSS_RSP0)

/* User-side symbols (guest/lib, linker script). */
extern char reprise_user_start[], reprise_thread_entry[], reprise_user_end[];
extern struct reprise_bootinfo reprise_uboot;

/* Exported for the VMM (trace.h). */
struct reprise_trace_ring reprise_trace_ring;
uint32_t reprise_current_tid;
struct thread *reprise_current;

/* Global, with its layout in abi.h: a debugger reads the threads here. */
struct thread reprise_threads[MAX_THREADS];
static uint8_t kstacks[MAX_THREADS][KSTACK_SIZE] __attribute__((aligned(64)));
static struct link runq = { &runq, &runq }, sleepq = { &sleepq, &sleepq };
static struct link buckets[NBUCKETS];
static uint8_t free_slots[MAX_THREADS];
static uint32_t nfree;
static uint64_t mem_end, ustack_base;
static uint32_t timer_on;
static uint32_t intc_mask = ~0u;   /* REPRISE_PORT_INTC_MASK: open lines are 0 */

/* The disk: one kernel-owned request descriptor, at most one request in
 * flight (disk_owner's), later callers wait on diskq (FIFO). */
static struct reprise_disk_req dreq __attribute__((aligned(32)));
static struct thread *disk_owner;
static struct link diskq = { &diskq, &diskq };
static uint64_t disk_cap;          /* sectors, read once at boot; 0: no disk */

/* The NIC: the kernel only forwards the rings' addresses and the tails to
 * the device and counts its interrupts; the user library does the rest. */
static uint32_t nic_on;            /* a network backend is attached */
static uint64_t nic_irqs;          /* REPRISE_IRQ_NIC interrupts so far */
static struct thread *nic_waiter;  /* blocked in SYS_NET_WAIT (at most one) */

#define cur reprise_current
#define IDLE (&reprise_threads[0])
#define SL2T(l) ((struct thread *)((char *)(l) - offsetof(struct thread, sl)))

_Static_assert(offsetof(struct thread, q) == 0, "q must be first");
_Static_assert(sizeof(struct reprise_frame) == 22 * 8, "frame size");
_Static_assert(MAX_THREADS == REPRISE_MAX_THREADS && sizeof(struct thread) == REPRISE_THREAD_SIZE &&
	offsetof(struct thread, frame) == REPRISE_THREAD_FRAME && offsetof(struct thread, tid) == REPRISE_THREAD_TID &&
	offsetof(struct thread, state) == REPRISE_THREAD_STATE && T_RUNNABLE == REPRISE_THREAD_RUNNABLE &&
	T_BLOCKED == REPRISE_THREAD_BLOCKED, "thread table layout (abi.h)");

/* ---- lists */
static inline void list_init(struct link *h)
{
	h->next = h->prev = h;
}

static inline void list_add_tail(struct link *h, struct link *n)
{
	struct link *p = h->prev;
	n->next = h;
	n->prev = p;
	p->next = n;
	h->prev = n;
}

static inline void list_del(struct link *n)
{
	struct link *nx = n->next, *pv = n->prev;
	pv->next = nx;
	nx->prev = pv;
}

/* The branch count now: the trace-pc hook keeps it in the swbc page; the
 * register counter in r15, which no kernel code touches, placed by the
 * VMM to reach the count it wrote as armed: count = armed + top - r15.
 * The VMM places r15 again whenever it stops the vCPU, here too (a
 * recording's kicks land anywhere), so armed is read before and after r15
 * and the read is retried when it moved. r15 and armed differ between a
 * recording and its replays, their difference does not, so no value or
 * flag derived from one alone may outlive this: the arithmetic is lea and
 * not (no flags), the last compare is between equals, and the scratch
 * register is cleared with mov. */
static inline uint64_t branch_count(void)
{
#ifdef REPRISE_COUNTER_R15
	uint64_t c, t;
	__asm__ volatile(
		"1:\n\t"
		"mov %2, %1\n\t"
		"mov %%r15, %0\n\t"
		"not %0\n\t"             /* -r15 - 1 */
		"lea 1(%0,%1), %0\n\t"   /* armed - r15 */
		"cmp %2, %1\n\t"
		"jne 1b\n\t"             /* r15 placed again meanwhile */
		"movabs %3, %1\n\t"
		"lea (%0,%1), %0\n\t"    /* + top */
		"mov $0, %1"
		: "=&r"(c), "=&r"(t)
		: "m"(SWBC->armed), "i"(REPRISE_COUNTER_GUARD_TOP)
		: "cc");
	return c;
#else
	return SWBC->count;
#endif
}

/* ---- trace ring */
static inline void trace(uint32_t kind, uint32_t tid, uint64_t a, uint64_t b)
{
	struct reprise_trace_ring *r = &reprise_trace_ring;
	uint64_t h = r->head;
	struct reprise_trace_rec *e = &r->rec[h & (REPRISE_TRACE_CAPACITY - 1)];
	e->kind = kind;
	e->tid = tid;
	e->a = a;
	e->b = b;
	e->ticks = CLOCK->ticks;
	e->branches = branch_count();
	__asm__ volatile("" ::: "memory");   /* record complete before head moves */
	r->head = h + 1;
}

/* ---- scheduling */
static inline void make_runnable(struct thread *t)
{
	t->state = T_RUNNABLE;
	list_add_tail(&runq, &t->q);
}

static inline struct reprise_frame *switch_to(struct thread *t, uint64_t reason)
{
	trace(REPRISE_TRACE_SWITCH, cur->tid, t->tid, reason);
	cur = t;
	reprise_current_tid = t->tid;
	TSS_RSP0 = t->kstack_top;
	return t->frame;
}

__attribute__((noinline, noreturn, cold)) static void deadlock(void)
{
	kputs("kernel: deadlock: no runnable thread and no timed wait; blocked:");
	for (int i = 1; i < MAX_THREADS; i++) {
		if (reprise_threads[i].state == T_BLOCKED) {
			kputc(' ');
			kputdec(reprise_threads[i].tid);
			if (reprise_threads[i].futex) {
				kputs("@futex:");
				kputhex(reprise_threads[i].futex);
			}
		}
	}
	kputc('\n');
	kexit(121);
}

/* The current thread gave up the CPU (blocked, exited): run the next one. */
static struct reprise_frame *schedule(uint64_t reason)
{
	struct link *n = runq.next;
	if (likely(n != &runq)) {
		list_del(n);
		return switch_to((struct thread *)n, reason);
	}
	if (sleepq.next == &sleepq && !disk_owner && !nic_waiter)
		deadlock();               /* (a disk request in flight or a frame will wake someone) */
	return switch_to(IDLE, reason);
}

/* Insert into the sleep queue, sorted by deadline, FIFO among equals. */
static void sleep_insert(struct thread *t, uint64_t deadline)
{
	struct link *l = sleepq.next;
	t->deadline = deadline;
	while (l != &sleepq && SL2T(l)->deadline <= deadline)
		l = l->next;
	list_add_tail(l, &t->sl);    /* insert before l */
}

__attribute__((noinline)) static void wake_expired(uint64_t now)
{
	struct link *l;
	while ((l = sleepq.next) != &sleepq && SL2T(l)->deadline <= now) {
		struct thread *t = SL2T(l);
		list_del(l);
		t->sl.next = 0;
		if (t->futex) {          /* futex wait timed out */
			list_del(&t->q);
			t->futex = 0;
			t->frame->rax = (uint64_t)-REPRISE_ETIMEDOUT;
		}
		make_runnable(t);
	}
}

/* ---- vector 0x20: the timer tick */
struct reprise_frame *reprise_trap_tick(struct reprise_frame *f)
{
	struct link *s = sleepq.next;
	if (s != &sleepq && SL2T(s)->deadline <= CLOCK->ns)
		wake_expired(CLOCK->ns);
	struct link *n = runq.next;
	if (n == &runq)
		return f;                 /* nobody else to run */
	list_del(n);
	if (cur != IDLE)
		make_runnable(cur);       /* round robin: to the tail */
	return switch_to((struct thread *)n, REPRISE_SWITCH_PREEMPT);
}

/* ---- threads */
static int urange(uint64_t p, uint64_t n)
{
	return p >= REPRISE_USER_BASE && p <= mem_end && n <= mem_end - p;
}

static struct thread *thread_alloc(uint64_t rip, uint64_t a0, uint64_t a1, uint64_t a2)
{
	if (nfree == 0)
		return 0;
	uint32_t slot = free_slots[--nfree];
	struct thread *t = &reprise_threads[slot];
	t->tid = t->gen * MAX_THREADS + slot;
	t->joiner = 0;
	t->futex = 0;
	t->sl.next = 0;
	t->exit_value = 0;
	struct reprise_frame *f = t->frame;
	memset(f, 0, sizeof *f);
	f->rdi = a0;
	f->rsi = a1;
	f->rdx = a2;
	f->rip = rip;
	f->cs = REPRISE_SEL_UCODE;
	f->rflags = RFLAGS_USER;
	/* 16-byte aligned minus a (never used) return address, as after a call */
	f->rsp = ustack_base + (uint64_t)slot * USTACK_SIZE - 8;
	f->ss = REPRISE_SEL_UDATA;
	return t;
}

static void thread_free(struct thread *t)
{
	t->state = T_FREE;
	t->gen++;
	free_slots[nfree++] = (uint8_t)t->slot;
}

/* ---- system calls: each gets the caller's frame, returns the frame to resume */
typedef struct reprise_frame *(*sysfn)(struct reprise_frame *);

static struct reprise_frame *sys_exit(struct reprise_frame *f)
{
	kexit((uint32_t)f->rdi);
}

static struct reprise_frame *sys_write(struct reprise_frame *f)
{
	uint64_t p = f->rdi, n = f->rsi;
	if (!urange(p, n)) {
		f->rax = (uint64_t)-REPRISE_EINVAL;
		return f;
	}
	kwrite((const char *)p, n);
	f->rax = n;
	return f;
}

/* Random bytes, 4 per exit to the entropy device; bounded so one call
 * cannot hold the (emulated, interrupts-off) kernel for long. */
static struct reprise_frame *sys_getrandom(struct reprise_frame *f)
{
	uint64_t p = f->rdi, n = f->rsi;
	if (n > 256 || !urange(p, n)) {
		f->rax = (uint64_t)-REPRISE_EINVAL;
		return f;
	}
	uint8_t *b = (uint8_t *)p;
	for (uint64_t i = 0; i < n; i += 4) {
		uint32_t r = inl(REPRISE_PORT_ENTROPY);
		for (uint64_t j = 0; j < 4 && i + j < n; j++)
			b[i + j] = (uint8_t)(r >> (8 * j));
	}
	f->rax = n;
	return f;
}

static struct reprise_frame *sys_thread_create(struct reprise_frame *f)
{
	if (!urange(f->rdi, 1)) {
		f->rax = (uint64_t)-REPRISE_EINVAL;
		return f;
	}
	struct thread *t = thread_alloc((uint64_t)reprise_thread_entry, f->rdi, f->rsi, 0);
	if (!t) {
		f->rax = (uint64_t)-REPRISE_EAGAIN;
		return f;
	}
	make_runnable(t);
	trace(REPRISE_TRACE_CREATE, cur->tid, t->tid, f->rdi);
	f->rax = t->tid;
	return f;
}

static struct reprise_frame *sys_thread_exit(struct reprise_frame *f)
{
	struct thread *c = cur;
	uint64_t v = f->rdi;
	if (c->tid == 1)                /* the main thread: the guest stops */
		kexit((uint32_t)v);
	trace(REPRISE_TRACE_EXIT, c->tid, v, 0);
	if (c->joiner) {
		c->joiner->frame->rax = v;
		make_runnable(c->joiner);
		thread_free(c);         /* its stacks are reused only by a later create */
	} else {
		c->state = T_ZOMBIE;
		c->exit_value = v;
	}
	return schedule(REPRISE_SWITCH_EXIT);
}

static struct reprise_frame *sys_thread_join(struct reprise_frame *f)
{
	uint64_t tid = f->rdi;
	struct thread *c = cur, *t = &reprise_threads[tid % MAX_THREADS];
	if (tid == 0 || t->tid != tid || t->state == T_FREE || t == c || t->joiner) {
		f->rax = (uint64_t)-REPRISE_EINVAL;
		return f;
	}
	if (t->state == T_ZOMBIE) {
		f->rax = t->exit_value;
		thread_free(t);
		return f;
	}
	t->joiner = c;
	c->state = T_BLOCKED;
	return schedule(REPRISE_SWITCH_BLOCK);
}

static struct reprise_frame *sys_yield(struct reprise_frame *f)
{
	f->rax = 0;
	struct link *n = runq.next;
	if (n == &runq)
		return f;
	list_del(n);
	make_runnable(cur);
	return switch_to((struct thread *)n, REPRISE_SWITCH_YIELD);
}

static struct reprise_frame *sys_sleep_ns(struct reprise_frame *f)
{
	uint64_t ns = f->rdi;
	if (!timer_on || ns == 0)       /* no tick to wake us: just yield */
		return sys_yield(f);
	uint64_t now = CLOCK->ns;
	uint64_t d = now + ns < now ? ~0ULL : now + ns;
	f->rax = 0;
	sleep_insert(cur, d);
	cur->state = T_BLOCKED;
	return schedule(REPRISE_SWITCH_BLOCK);
}

static inline struct link *bucket(uint64_t addr)
{
	return &buckets[(addr * 0x9E3779B97F4A7C15ULL) >> 58];
}

static struct reprise_frame *sys_futex_wait(struct reprise_frame *f)
{
	uint64_t a = f->rdi, tmo = f->rdx;
	struct thread *c = cur;
	if ((a & 3) || !urange(a, 4)) {
		f->rax = (uint64_t)-REPRISE_EINVAL;
		return f;
	}
	if (*(volatile uint32_t *)a != (uint32_t)f->rsi) {
		f->rax = (uint64_t)-REPRISE_EAGAIN;
		return f;
	}
	f->rax = 0;
	c->futex = a;
	list_add_tail(bucket(a), &c->q);
	if (tmo && timer_on) {
		uint64_t now = CLOCK->ns;
		sleep_insert(c, now + tmo < now ? ~0ULL : now + tmo);
	}
	c->state = T_BLOCKED;
	return schedule(REPRISE_SWITCH_BLOCK);
}

static struct reprise_frame *sys_futex_wake(struct reprise_frame *f)
{
	uint64_t a = f->rdi, n = f->rsi, woken = 0;
	struct link *h = bucket(a), *l = h->next;
	while (l != h && woken < n) {
		struct thread *t = (struct thread *)l;
		l = l->next;
		if (t->futex != a)
			continue;
		list_del(&t->q);
		t->futex = 0;
		if (t->sl.next) {         /* a timed wait: leave the sleep queue */
			list_del(&t->sl);
			t->sl.next = 0;
		}
		make_runnable(t);         /* its frame->rax is already 0 */
		woken++;
	}
	f->rax = woken;
	return f;
}

/* ---- disk. A caller's parameters stay in its frame (rax = its system-call
 * number, rdi = sector, rsi = count, rdx = buf) until its request is
 * submitted; the completion IRQ writes its result to frame->rax. */
_Static_assert(SYS_DISK_WRITE - SYS_DISK_READ == REPRISE_DISK_WRITE - REPRISE_DISK_READ,
	       "disk op from the system-call number");

static void disk_submit(struct thread *t)
{
	struct reprise_frame *f = t->frame;
	disk_owner = t;
	dreq.op = (uint32_t)f->rax - (SYS_DISK_READ - REPRISE_DISK_READ);
	dreq.count = (uint32_t)f->rsi;
	dreq.sector = f->rdi;
	dreq.buf = f->rdx;
	dreq.status = REPRISE_DISK_PENDING;
	dreq.tag = t->tid;
	__asm__ volatile("" ::: "memory");   /* descriptor complete before the exit */
	outl(REPRISE_PORT_DISK, (uint32_t)(uint64_t)&dreq);
}

/* SYS_DISK_READ and SYS_DISK_WRITE (sector, count, buf): block until done. */
static struct reprise_frame *sys_disk_rw(struct reprise_frame *f)
{
	uint64_t s = f->rdi, n = f->rsi;
	struct thread *c = cur;
	/* n > disk_cap also rejects every request when there is no disk */
	if (n - 1 >= REPRISE_DISK_MAX_SECTORS || n > disk_cap || s > disk_cap - n ||
	    !urange(f->rdx, n * REPRISE_DISK_SECTOR)) {
		f->rax = (uint64_t)-REPRISE_EINVAL;
		return f;
	}
	c->state = T_BLOCKED;
	if (disk_owner)
		list_add_tail(&diskq, &c->q);   /* behind the request in flight */
	else
		disk_submit(c);
	return schedule(REPRISE_SWITCH_BLOCK);
}

static struct reprise_frame *sys_disk_sectors(struct reprise_frame *f)
{
	f->rax = disk_cap;
	return f;
}

/* ---- vector 0x22: the request in flight completed. Its owner gets the
 * result and becomes runnable (it runs at once if the CPU was idle; else at
 * the tail of the run queue: a wake-up never preempts); the next queued
 * request is submitted. */
struct reprise_frame *reprise_trap_disk(struct reprise_frame *f)
{
	struct thread *t = disk_owner;
	uint32_t st = ((volatile struct reprise_disk_req *)&dreq)->status;
	if (unlikely(!t || st == REPRISE_DISK_PENDING))
		return f;                 /* spurious */
	t->frame->rax = st == REPRISE_DISK_OK ? 0 : (uint64_t)-REPRISE_EIO;
	disk_owner = 0;
	struct link *n = diskq.next;
	if (unlikely(n != &diskq)) {
		list_del(n);
		disk_submit((struct thread *)n);
	}
	t->state = T_RUNNABLE;
	if (cur == IDLE)
		return switch_to(t, REPRISE_SWITCH_PREEMPT);   /* from idle: a wake-up */
	list_add_tail(&runq, &t->q);
	return f;
}

/* ---- NIC. SYS_NET_SETUP(rx_ring, tx_ring): both rings of
 * REPRISE_NIC_RING descriptors must be user memory. */
#define NIC_RING_BYTES (REPRISE_NIC_RING * sizeof(struct reprise_nic_desc))

static struct reprise_frame *sys_net_setup(struct reprise_frame *f)
{
	uint64_t rx = f->rdi, tx = f->rsi;
	if (!nic_on)
		f->rax = (uint64_t)-REPRISE_EIO;
	else if (!urange(rx, NIC_RING_BYTES) || !urange(tx, NIC_RING_BYTES))
		f->rax = (uint64_t)-REPRISE_EINVAL;
	else {
		outl(REPRISE_PORT_NIC_RXRING, (uint32_t)rx);
		outl(REPRISE_PORT_NIC_TXRING, (uint32_t)tx);
		f->rax = 0;
	}
	return f;
}

/* SYS_NET_RXTAIL / SYS_NET_TXTAIL (index): one port write each; the device
 * reads the ring in guest memory itself (TX: during this very exit). */
static inline struct reprise_frame *net_tail(struct reprise_frame *f, uint16_t port)
{
	if (unlikely(!nic_on)) {
		f->rax = (uint64_t)-REPRISE_EIO;
		return f;
	}
	__asm__ volatile("" ::: "memory");   /* descriptors written before the exit */
	outl(port, (uint32_t)f->rdi);
	f->rax = 0;
	return f;
}

static struct reprise_frame *sys_net_rxtail(struct reprise_frame *f)
{
	return net_tail(f, REPRISE_PORT_NIC_RXTAIL);
}

static struct reprise_frame *sys_net_txtail(struct reprise_frame *f)
{
	return net_tail(f, REPRISE_PORT_NIC_TXTAIL);
}

/* SYS_NET_WAIT(seen): the NIC interrupt count, at once if it differs from
 * seen; else block until the next NIC interrupt (one waiter at a time). */
static struct reprise_frame *sys_net_wait(struct reprise_frame *f)
{
	uint64_t n = nic_irqs;
	if (unlikely(!nic_on))
		f->rax = (uint64_t)-REPRISE_EIO;
	else if (n != f->rdi)
		f->rax = n;
	else if (unlikely(nic_waiter != 0))
		f->rax = (uint64_t)-REPRISE_EAGAIN;
	else {
		struct thread *c = cur;
		nic_waiter = c;
		c->state = T_BLOCKED;
		return schedule(REPRISE_SWITCH_BLOCK);
	}
	return f;
}

/* ---- vector 0x23: frames were delivered to the RX ring. Count it; the
 * waiter, if any, gets the count and runs at once if the CPU was idle,
 * else joins the tail of the run queue (a wake-up never preempts). */
struct reprise_frame *reprise_trap_nic(struct reprise_frame *f)
{
	uint64_t n = ++nic_irqs;
	struct thread *t = nic_waiter;
	if (!t)
		return f;
	nic_waiter = 0;
	t->frame->rax = n;
	t->state = T_RUNNABLE;
	if (cur == IDLE)
		return switch_to(t, REPRISE_SWITCH_PREEMPT);   /* from idle: a wake-up */
	list_add_tail(&runq, &t->q);
	return f;
}

static struct reprise_frame *sys_clock_ns(struct reprise_frame *f)
{
	f->rax = hcall(REPRISE_HC_TIME, 0, 0, 0);
	return f;
}

static struct reprise_frame *sys_trace(struct reprise_frame *f)
{
	trace(REPRISE_TRACE_USER | (uint32_t)(f->rdi & 0xFFFF), cur->tid, f->rsi, f->rdx);
	f->rax = 0;
	return f;
}

static struct reprise_frame *sys_gettid(struct reprise_frame *f)
{
	f->rax = cur->tid;
	return f;
}

static struct reprise_frame *sys_bench(struct reprise_frame *f)
{
	uint64_t op = f->rdi, n = f->rsi;
	f->rax = 0;
	if (op == REPRISE_BENCH_NOP)
		return f;
	if (op == REPRISE_BENCH_MARK)
		hcall(REPRISE_HC_MARK, n, 0, 0);
	else if (op == REPRISE_BENCH_EXIT_CPL0)
		while (n--)
			outb(REPRISE_PORT_NULL, 0);
	else if (op == REPRISE_BENCH_IRQ) {
		/* Only the soft line, so no timer tick can reschedule from
		 * inside this loop; each raise is injected right after its exit
		 * and lands in reprise_trap_other as a stray IRQ. */
		outl(REPRISE_PORT_INTC_MASK, ~(1u << REPRISE_IRQ_SOFT));
		__asm__ volatile("sti" ::: "memory");
		while (n--)
			outl(REPRISE_PORT_INTC_RAISE, REPRISE_IRQ_SOFT);
		__asm__ volatile("cli" ::: "memory");
		outl(REPRISE_PORT_INTC_MASK, intc_mask);
	} else
		f->rax = (uint64_t)-REPRISE_EINVAL;
	return f;
}

static const sysfn systab[] = {
	[SYS_EXIT] = sys_exit,
	[SYS_WRITE] = sys_write,
	[SYS_THREAD_CREATE] = sys_thread_create,
	[SYS_THREAD_EXIT] = sys_thread_exit,
	[SYS_THREAD_JOIN] = sys_thread_join,
	[SYS_YIELD] = sys_yield,
	[SYS_SLEEP_NS] = sys_sleep_ns,
	[SYS_FUTEX_WAIT] = sys_futex_wait,
	[SYS_FUTEX_WAKE] = sys_futex_wake,
	[SYS_CLOCK_NS] = sys_clock_ns,
	[SYS_TRACE] = sys_trace,
	[SYS_GETTID] = sys_gettid,
	[SYS_BENCH] = sys_bench,
	[SYS_GETRANDOM] = sys_getrandom,
	[SYS_DISK_READ] = sys_disk_rw,
	[SYS_DISK_WRITE] = sys_disk_rw,
	[SYS_DISK_SECTORS] = sys_disk_sectors,
	[SYS_NET_SETUP] = sys_net_setup,
	[SYS_NET_RXTAIL] = sys_net_rxtail,
	[SYS_NET_TXTAIL] = sys_net_txtail,
	[SYS_NET_WAIT] = sys_net_wait,
};
#define NSYS (sizeof systab / sizeof systab[0])

/* ---- vector 6: #UD, the system-call gate (`ud2` = 0F 0B at CPL3) */
struct reprise_frame *reprise_trap_ud(struct reprise_frame *f)
{
	uint64_t nr = f->rax;
	if (unlikely((f->cs & 3) != 3 || *(volatile uint16_t *)f->rip != 0x0B0F || nr >= NSYS))
		kfault(f, 0);
	f->rip += 2;
	return systab[nr](f);
}

/* ---- every other vector: CPU exceptions (fatal), stray IRQs (ignored) */
static const char vecnames[32][4] = {
	"DE", "DB", "NMI", "BP", "OF", "BR", "UD", "NM", "DF", "CSO", "TS", "NP",
	"SS", "GP", "PF", "15", "MF", "AC", "MC", "XM", "VE", "CP", "22", "23",
	"24", "25", "26", "27", "HV", "VC", "SX", "31",
};

void kfault(struct reprise_frame *f, uint64_t cr2)
{
	uint64_t v = f->vector;
	kputs("fault: ");
	if (v < 32) {
		kputc('#');
		kputs(vecnames[v]);
	} else {
		kputs("vector ");
		kputdec(v);
	}
	if (v == 6 && (f->cs & 3) == 3 && *(volatile uint16_t *)f->rip == 0x0B0F) {
		kputs(" (bad system call ");
		kputdec(f->rax);
		kputc(')');
	}
	kputs((f->cs & 3) ? " in thread " : " in kernel, thread ");
	kputdec(cur ? cur->tid : 0);
	kputs(" at rip=");
	kputhex(f->rip);
	if (v == 14) {
		kputs(" cr2=");
		kputhex(cr2);
	}
	kputs(" err=");
	kputhex(f->error);
	kputs(" rsp=");
	kputhex(f->rsp);
	kputc('\n');
	hcall(REPRISE_HC_FAULT, v, (uint64_t)f, cr2);
	kexit(128 + (uint32_t)v);   /* only if the VMM ignored HC_FAULT */
}

struct reprise_frame *reprise_trap_other(struct reprise_frame *f)
{
	uint64_t v = f->vector, cr2 = 0;
	if (v >= 32)
		return f;                 /* stray or masked IRQ: nothing to do */
	if (v == 3 && hcall(REPRISE_HC_BREAKPOINT, 3, (uint64_t)f, 0) == 0)
		return f;                 /* int3 probe handled by the VMM */
	if (v == 14)
		__asm__ volatile("mov %%cr2, %0" : "=r"(cr2));
	kfault(f, cr2);
}

void kexit(uint32_t status)
{
	outl(REPRISE_PORT_EXIT, status);
	for (;;)
		__asm__ volatile("cli; hlt");
}

/* ---- boot */
void reprise_resume(struct reprise_frame *f) __attribute__((noreturn));
void reprise_idle(void);
void kmain(struct reprise_bootinfo *bi) __attribute__((noreturn));

void kmain(struct reprise_bootinfo *bi)
{
	if (bi->magic != REPRISE_BOOT_MAGIC) {
		kputs("kernel: bad boot magic\n");
		kexit(120);
	}
	mem_end = bi->mem_bytes;
	/* user stacks right above the user image, then the heap */
	ustack_base = ((uint64_t)reprise_user_end + USTACK_SIZE - 1) & ~(uint64_t)(USTACK_SIZE - 1);
	uint64_t heap = ustack_base + (MAX_THREADS - 1) * USTACK_SIZE;
	if (heap + (1 << 20) > mem_end) {
		kputs("kernel: not enough guest RAM\n");
		kexit(120);
	}

	for (int i = 0; i < NBUCKETS; i++)
		list_init(&buckets[i]);
	reprise_trace_ring.magic = REPRISE_TRACE_MAGIC;
	reprise_trace_ring.capacity = REPRISE_TRACE_CAPACITY;
	reprise_trace_ring.rec_size = sizeof(struct reprise_trace_rec);

	for (uint32_t i = 0; i < MAX_THREADS; i++) {
		struct thread *t = &reprise_threads[i];
		t->slot = i;
		t->kstack_top = (uint64_t)&kstacks[i][KSTACK_SIZE];
		t->frame = (struct reprise_frame *)(t->kstack_top - sizeof(struct reprise_frame));
	}
	for (uint32_t i = MAX_THREADS - 1; i >= 1; i--)
		free_slots[nfree++] = (uint8_t)i;

	/* idle: CPL0 on kstacks[0]; an interrupt in the idle loop builds its
	 * frame exactly where this one is, since the loop never pushes. */
	struct thread *idle = IDLE;
	idle->tid = 0;
	idle->state = T_RUNNABLE;
	idle->frame->rip = (uint64_t)reprise_idle;
	idle->frame->cs = REPRISE_SEL_KCODE;
	idle->frame->rflags = 0x2;
	idle->frame->rsp = idle->kstack_top;
	idle->frame->ss = REPRISE_SEL_KDATA;

	/* the user side cannot read the (supervisor) boot-info page: copy it */
	memcpy(&reprise_uboot, bi, sizeof *bi);
	reprise_uboot.cmdline[REPRISE_CMDLINE_MAX - 1] = 0;

	struct thread *m = thread_alloc((uint64_t)reprise_user_start,
					(uint64_t)&reprise_uboot, heap, mem_end);
	m->state = T_RUNNABLE;
	trace(REPRISE_TRACE_CREATE, 0, m->tid, (uint64_t)reprise_user_start);

	/* The disk's capacity, once. An unclaimed port reads all ones (a VMM
	 * without the disk device): no disk either. */
	uint32_t cap = inl(REPRISE_PORT_DISK_CAP);
	disk_cap = cap == ~0u ? 0 : cap;

	/* The NIC: INFO is 1 with a backend attached (0 without; all ones on
	 * a VMM without the device). */
	nic_on = inl(REPRISE_PORT_NIC_INFO) == 1;

	/* only the timer, disk and NIC lines are used; the rest stays masked */
	if (disk_cap)
		intc_mask &= ~(1u << REPRISE_IRQ_DISK);
	if (nic_on)
		intc_mask &= ~(1u << REPRISE_IRQ_NIC);
	if (bi->timer_hz) {
		timer_on = 1;
		intc_mask &= ~(1u << REPRISE_IRQ_TIMER);
	}
	outl(REPRISE_PORT_INTC_MASK, intc_mask);
	if (timer_on) {
		uint32_t us = 1000000 / bi->timer_hz;
		outl(REPRISE_PORT_TIMER, us ? us : 1);
	}

	cur = m;
	reprise_current_tid = m->tid;
	TSS_RSP0 = m->kstack_top;
	reprise_resume(m->frame);
}
