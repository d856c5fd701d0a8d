/*
 * deadlock_gatelock (InSight §5.4.3): T1: G, L1, L2; T2: G, L2, L1. L1 and
 * L2 are taken in both orders, but always under the gate lock G, so the
 * potential cycle L1 <-> L2 is protected by G: a detector must report it as
 * protected, not as a deadlock. Serialized by join, never deadlocks.
 */
#include <reprise/ulib.h>

static struct mutex G = MUTEX_INIT("G"), L1 = MUTEX_INIT("L1"), L2 = MUTEX_INIT("L2");

struct order {
	struct mutex *first, *second;
};

static long gated(void *arg)
{
	struct order *o = arg;
	mutex_lock(&G);
	mutex_lock(o->first);
	sleep_ms(1);
	mutex_lock(o->second);
	mutex_unlock(o->second);
	mutex_unlock(o->first);
	mutex_unlock(&G);
	return 0;
}

int wl_deadlock_gatelock(const struct args *a)
{
	(void)a;
	static struct order orders[2] = { { &L1, &L2 }, { &L2, &L1 } };
	static const char *const names[2] = { "G,L1,L2", "G,L2,L1" };
	int tid[2], bad = 0;
	for (int i = 0; i < 2; i++) {
		tid[i] = thread_create(gated, &orders[i]);
		bad |= tid[i] < 0 || thread_join(tid[i]) != 0;
	}
	truth("lock=G addr=%p", (void *)&G);
	truth("lock=L1 addr=%p", (void *)&L1);
	truth("lock=L2 addr=%p", (void *)&L2);
	for (int i = 0; i < 2; i++)
		truth("thread=T%d tid=%d order=%s", i + 1, tid[i], names[i]);
	truth("expect=protected locks=L1,L2 gate=G cycle=L2@T2>L1@T2>L1@T1>L2@T1>L2@T2 deadlocks=0");
	if (bad) {
		truth("result=FAIL");
		return 1;
	}
	truth("result=ok deadlocked=0");
	return 0;
}
