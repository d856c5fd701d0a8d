/*
 * syn_cont: InSight's synthetic lock-contention workload (§5.3). 16 threads,
 * each looping
 *   comp(); lock(level1[id/2]); comp(); unlock(level1[id/2]);
 *   comp(); lock(level2[id/8]); comp(); unlock(level2[id/8]);
 * 8 level-1 locks shared by 2 threads, 2 level-2 locks shared by 8 threads.
 * Each critical section does a non-atomic read-comp-write of a counter of its
 * lock, so lost updates would show a mutual-exclusion failure.
 *
 * On one vCPU a lock is contended only when its holder is preempted inside
 * the critical section, so contention per second is set by the timer rate;
 * the share of contended acquisitions by how few acquisitions a time slice
 * holds. The defaults (iters=10 work=800000: each comp() ~2 ms, a 10 ms
 * slice holds about one iteration) give InSight's Table 3 its shape: the
 * level-2 locks the most contended, blocking ~5x more often than level-1,
 * ownership changing on most level-2 acquisitions. Tests that want many
 * cheap acquisitions pass work=8000.
 */
#include <reprise/ulib.h>

#define NTHREADS 16
#define NL1 (NTHREADS / 2)
#define NL2 (NTHREADS / 8)

static struct mutex level1[NL1], level2[NL2];
static volatile uint64_t count1[NL1], count2[NL2];
static uint64_t iters, work;
static int tids[NTHREADS];
static const char *const l1names[NL1] = {
	"L1[0]", "L1[1]", "L1[2]", "L1[3]", "L1[4]", "L1[5]", "L1[6]", "L1[7]",
};
static const char *const l2names[NL2] = { "L2[0]", "L2[1]" };

static NOINLINE uint64_t comp(uint64_t x)
{
	for (uint64_t i = 0; i < work; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		x ^= x >> 29;
	}
	return x;
}

static long worker(void *arg)
{
	long id = (long)arg;
	struct mutex *m1 = &level1[id / 2], *m2 = &level2[id / 8];
	volatile uint64_t *c1 = &count1[id / 2], *c2 = &count2[id / 8];
	uint64_t x = (uint64_t)id + 1;
	for (uint64_t i = 0; i < iters; i++) {
		x = comp(x);
		mutex_lock(m1);
		uint64_t v = *c1;
		x = comp(x);
		*c1 = v + 1;
		mutex_unlock(m1);
		x = comp(x);
		mutex_lock(m2);
		v = *c2;
		x = comp(x);
		*c2 = v + 1;
		mutex_unlock(m2);
	}
	return (long)(x & 0x7fffffff);
}

int wl_syn_cont(const struct args *a)
{
	iters = arg_u64(a, "iters", 10);
	work = arg_u64(a, "work", 800000);
	for (int i = 0; i < NL1; i++)
		mutex_init(&level1[i], l1names[i]);
	for (int i = 0; i < NL2; i++)
		mutex_init(&level2[i], l2names[i]);
	for (long i = 0; i < NTHREADS; i++) {
		tids[i] = thread_create(worker, (void *)i);
		if (tids[i] < 0) {
			truth("result=FAIL create=%d", tids[i]);
			return 1;
		}
	}
	uint64_t xsum = 0;
	for (int i = 0; i < NTHREADS; i++)
		xsum += (uint64_t)thread_join(tids[i]);

	int ok = 1;
	uint64_t acq = 0, con = 0, c1 = 0, c2 = 0;
	for (int i = 0; i < NTHREADS; i++)
		truth("thread=%d tid=%d l1=%s l2=%s", i, tids[i], l1names[i / 2], l2names[i / 8]);
	for (int i = 0; i < NL1; i++) {
		struct mutex *m = &level1[i];
		truth("lock=%s addr=%p acquired=%lu contended=%lu counter=%lu",
		      m->name, (void *)m, (unsigned long)m->acquired,
		      (unsigned long)m->contended, (unsigned long)count1[i]);
		ok &= m->acquired == 2 * iters && count1[i] == 2 * iters;
		acq += m->acquired;
		con += m->contended;
		c1 += count1[i];
	}
	for (int i = 0; i < NL2; i++) {
		struct mutex *m = &level2[i];
		truth("lock=%s addr=%p acquired=%lu contended=%lu counter=%lu",
		      m->name, (void *)m, (unsigned long)m->acquired,
		      (unsigned long)m->contended, (unsigned long)count2[i]);
		ok &= m->acquired == 8 * iters && count2[i] == 8 * iters;
		acq += m->acquired;
		con += m->contended;
		c2 += count2[i];
	}
	truth("threads=%d iters=%lu work=%lu acquired=%lu contended=%lu counter_l1=%lu counter_l2=%lu xsum=0x%lx",
	      NTHREADS, (unsigned long)iters, (unsigned long)work, (unsigned long)acq,
	      (unsigned long)con, (unsigned long)c1, (unsigned long)c2, (unsigned long)xsum);
	if (!ok) {
		truth("result=FAIL expected_l1=%lu expected_l2=%lu",
		      (unsigned long)(NTHREADS * iters), (unsigned long)(NTHREADS * iters));
		return 1;
	}
	truth("result=ok");
	return 0;
}
