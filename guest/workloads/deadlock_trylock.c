/*
 * deadlock_trylock (InSight §5.4.3): a potential deadlock through a trylock
 * that succeeds. T1: lock L1, lock L2; T2: lock L2, trylock L1. The threads
 * are serialized (T2 starts after T1 is joined, and each sleeps while
 * holding its first lock), so it never deadlocks; the lock trees still hold
 * the cycle L2(T2) -> L1(T2, trylock) -> L1(T1) -> L2(T1) -> L2(T2).
 */
#include <reprise/ulib.h>

static struct mutex L1 = MUTEX_INIT("L1"), L2 = MUTEX_INIT("L2");

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
	mutex_lock(&L2);
	sleep_ms(1);
	int r = mutex_trylock(&L1);
	if (r == 0)
		mutex_unlock(&L1);
	mutex_unlock(&L2);
	return r;
}

int wl_deadlock_trylock(const struct args *a)
{
	(void)a;
	int tid1 = thread_create(t1, 0);
	long r1 = thread_join(tid1);
	int tid2 = thread_create(t2, 0);
	long r2 = thread_join(tid2);
	truth("lock=L1 addr=%p", (void *)&L1);
	truth("lock=L2 addr=%p", (void *)&L2);
	truth("thread=T1 tid=%d order=L1,L2", tid1);
	truth("thread=T2 tid=%d order=L2,L1 trylock=L1", tid2);
	truth("expect=cycle locks=L1,L2 cycle=L2@T2>L1@T2>L1@T1>L2@T1>L2@T2");
	if (tid1 < 0 || tid2 < 0 || r1 != 0 || r2 != 0) {
		truth("result=FAIL trylock=%ld", r2);
		return 1;
	}
	truth("result=ok trylock_succeeded=1 deadlocked=0");
	return 0;
}
