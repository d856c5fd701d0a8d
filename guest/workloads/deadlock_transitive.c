/*
 * deadlock_transitive (InSight §5.4.3): a potential deadlock through three
 * threads. T1: L1 -> L2, T2: L2 -> L3, T3: L3 -> L1, serialized by join (and
 * a sleep while holding the first lock): never deadlocks, but the lock
 * order graph has the cycle L1 -> L2 -> L3 -> L1.
 */
#include <reprise/ulib.h>

static struct mutex L1 = MUTEX_INIT("L1"), L2 = MUTEX_INIT("L2"), L3 = MUTEX_INIT("L3");

struct pair {
	struct mutex *first, *second;
};

static long nested(void *arg)
{
	struct pair *p = arg;
	mutex_lock(p->first);
	sleep_ms(1);
	mutex_lock(p->second);
	mutex_unlock(p->second);
	mutex_unlock(p->first);
	return 0;
}

int wl_deadlock_transitive(const struct args *a)
{
	(void)a;
	static struct pair pairs[3] = { { &L1, &L2 }, { &L2, &L3 }, { &L3, &L1 } };
	static const char *const order[3] = { "L1,L2", "L2,L3", "L3,L1" };
	int tid[3], bad = 0;
	for (int i = 0; i < 3; i++) {
		tid[i] = thread_create(nested, &pairs[i]);
		bad |= tid[i] < 0 || thread_join(tid[i]) != 0;
	}
	truth("lock=L1 addr=%p", (void *)&L1);
	truth("lock=L2 addr=%p", (void *)&L2);
	truth("lock=L3 addr=%p", (void *)&L3);
	for (int i = 0; i < 3; i++)
		truth("thread=T%d tid=%d order=%s", i + 1, tid[i], order[i]);
	truth("expect=cycle locks=L1,L2,L3 cycle=L1@T1>L2@T1>L2@T2>L3@T2>L3@T3>L1@T3>L1@T1");
	if (bad) {
		truth("result=FAIL");
		return 1;
	}
	truth("result=ok deadlocked=0");
	return 0;
}
