/*
 * deadlock_trylock (InSight §5.4.3): how a trylock enters a potential
 * deadlock. A thread never waits in a trylock, so a trylock acquisition is
 * an edge one way only: other threads can wait for a lock taken by trylock,
 * the thread that took it never waited for it.
 *
 *   Pair A, a potential deadlock: T1 locks L1 then L2; T2 trylocks L2 (it
 *   succeeds) then locks L1. T1 holding L1 waiting for L2 while T2 holds L2
 *   waiting for L1 deadlocks: cycle L1@T1 > L2@T1 > L2@T2 > L1@T2 > L1@T1.
 *   Pair B, none: T3 locks L3 then L4; T4 locks L4 then trylocks L3 (it
 *   succeeds). T4 would not wait for L3, so the order inversion is safe.
 *
 * The threads are serialized (each pair's second thread starts after the
 * first is joined, and each sleeps while holding its first lock), so it
 * never deadlocks; the lock trees still hold both patterns. InSight's own
 * trylock sample (the trylock on the waiting side, like pair B) is reported
 * there as a cycle, against its rule for trylock edges; we follow the rule.
 */
#include <reprise/ulib.h>

static struct mutex L1 = MUTEX_INIT("L1"), L2 = MUTEX_INIT("L2");
static struct mutex L3 = MUTEX_INIT("L3"), L4 = MUTEX_INIT("L4");

static long t1(void *arg)
{
	(void)arg;
	mutex_lock(&L1);
	sleep_ms(1);
	mutex_lock(&L2);
	mutex_unlock(&L2);
	mutex_unlock(&L1);
	return 0;
}

static long t2(void *arg)
{
	(void)arg;
	int r = mutex_trylock(&L2);
	if (r != 0)
		return r;
	sleep_ms(1);
	mutex_lock(&L1);
	mutex_unlock(&L1);
	mutex_unlock(&L2);
	return 0;
}

static long t3(void *arg)
{
	(void)arg;
	mutex_lock(&L3);
	sleep_ms(1);
	mutex_lock(&L4);
	mutex_unlock(&L4);
	mutex_unlock(&L3);
	return 0;
}

static long t4(void *arg)
{
	(void)arg;
	mutex_lock(&L4);
	sleep_ms(1);
	int r = mutex_trylock(&L3);
	if (r == 0)
		mutex_unlock(&L3);
	mutex_unlock(&L4);
	return r;
}

int wl_deadlock_trylock(const struct args *a)
{
	(void)a;
	thread_fn fns[4] = { t1, t2, t3, t4 };
	int tid[4];
	long r[4];
	int ok = 1;
	for (int i = 0; i < 4; i++) {
		tid[i] = thread_create(fns[i], 0);
		r[i] = thread_join(tid[i]);
		ok &= tid[i] >= 0 && r[i] == 0;
	}
	truth("lock=L1 addr=%p", (void *)&L1);
	truth("lock=L2 addr=%p", (void *)&L2);
	truth("lock=L3 addr=%p", (void *)&L3);
	truth("lock=L4 addr=%p", (void *)&L4);
	truth("thread=T1 tid=%d order=L1,L2", tid[0]);
	truth("thread=T2 tid=%d order=L2,L1 trylock=L2", tid[1]);
	truth("thread=T3 tid=%d order=L3,L4", tid[2]);
	truth("thread=T4 tid=%d order=L4,L3 trylock=L3", tid[3]);
	truth("expect=cycle locks=L1,L2 cycle=L1@T1>L2@T1>L2@T2>L1@T2>L1@T1");
	truth("expect=none locks=L3,L4 why=trylock");
	if (!ok) {
		truth("result=FAIL trylock=%ld,%ld", r[1], r[3]);
		return 1;
	}
	truth("result=ok trylock_succeeded=2 deadlocked=0");
	return 0;
}
