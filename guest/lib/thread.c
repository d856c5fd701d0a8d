/* Threads, sleep, and the futex-based synchronisation objects. */
#include <reprise/ulib.h>

int thread_create(thread_fn fn, void *arg)
{
	return (int)sys2(SYS_THREAD_CREATE, (long)fn, (long)arg);
}

long thread_join(int tid)
{
	return sys1(SYS_THREAD_JOIN, tid);
}

void thread_exit(long value)
{
	sys1(SYS_THREAD_EXIT, value);
	__builtin_unreachable();
}

void sleep_ns(uint64_t ns)
{
	sys_sleep_ns(ns);
}

/* ---- mutex (Drepper, "Futexes are tricky", mutex 2/3)
 *
 * The lock functions are not instrumented for the branch counter (LOCKFN):
 * with no counted basic block between a function's entry and its first
 * atomic operation, and none between a successful acquisition and the
 * return, no interrupt (so no preemption) can be placed in between. A probe
 * at the entry of mutex_lock therefore sees the lock exactly as its
 * cmpxchg does — held or free — and a lock tool's "contended" equals the
 * counter kept here. */
#define LOCKFN NOINLINE __attribute__((no_sanitize_coverage))
void mutex_init(struct mutex *m, const char *name)
{
	m->state = 0;
	m->acquired = 0;
	m->contended = 0;
	m->name = name;
}

LOCKFN void mutex_lock(struct mutex *m)
{
	uint32_t c = atomic_cmpxchg32(&m->state, 0, 1);
	if (__builtin_expect(c == 0, 1)) {
		m->acquired++;           /* held: plain increments are safe */
		return;
	}
	if (c != 2)
		c = atomic_xchg32(&m->state, 2);
	while (c != 0) {
		sys_futex_wait(&m->state, 2, 0);
		c = atomic_xchg32(&m->state, 2);
	}
	m->acquired++;
	m->contended++;
}

LOCKFN void mutex_unlock(struct mutex *m)
{
	if (atomic_add32(&m->state, (uint32_t)-1) != 1) {
		m->state = 0;
		sys_futex_wake(&m->state, 1);
	}
}

LOCKFN int mutex_trylock(struct mutex *m)
{
	if (atomic_cmpxchg32(&m->state, 0, 1) != 0)
		return EBUSY;
	m->acquired++;
	return 0;
}

/* Relative timeout in ns, measured on the coarse (tick) clock. */
LOCKFN int mutex_timedlock(struct mutex *m, uint64_t ns)
{
	uint32_t c = atomic_cmpxchg32(&m->state, 0, 1);
	if (c == 0) {
		m->acquired++;
		return 0;
	}
	uint64_t deadline = clock_coarse_ns() + ns;
	if (c != 2)
		c = atomic_xchg32(&m->state, 2);
	while (c != 0) {
		uint64_t now = clock_coarse_ns();
		if (now >= deadline)
			return REPRISE_ETIMEDOUT;
		sys_futex_wait(&m->state, 2, deadline - now);
		c = atomic_xchg32(&m->state, 2);
	}
	m->acquired++;
	m->contended++;
	return 0;
}

/* ---- barrier */
void barrier_init(struct barrier *b, uint32_t n)
{
	b->gen = 0;
	b->count = 0;
	b->n = n;
}

void barrier_wait(struct barrier *b)
{
	uint32_t g = b->gen;
	if (atomic_add32(&b->count, 1) + 1 == b->n) {
		b->count = 0;
		atomic_add32(&b->gen, 1);
		sys_futex_wake(&b->gen, 0x7fffffff);
		return;
	}
	while (b->gen == g)
		sys_futex_wait(&b->gen, g, 0);
}

/* ---- one-shot event */
void event_set(struct event *e)
{
	e->set = 1;
	sys_futex_wake(&e->set, 0x7fffffff);
}

void event_wait(struct event *e)
{
	while (!e->set)
		sys_futex_wait(&e->set, 0, 0);
}
