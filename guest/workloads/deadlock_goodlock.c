/*
 * deadlock_goodlock: one potential deadlock, and a longer chain of the same
 * lock orders that cannot happen. T1: A -> B; N: A -> B -> C (nested);
 * T3: C -> D; T4: D -> A. Serialized by join (and a sleep while holding
 * each lock but the last), so it never deadlocks.
 *
 *   N holding A and B waiting for C, T3 holding C waiting for D, T4 holding
 *   D waiting for A deadlocks: cycle A@N > C@N > C@T3 > D@T3 > D@T4 > A@T4.
 *   The chain A@T1 > B@T1 > B@N > C@N > ... > A@T4 also joins the lock
 *   orders, but asks T1 (waiting for B) and N (waiting for C) to hold A at
 *   once: a detector that compares only the locks held above each step
 *   with a gate reports it, the improved goodlock rule (the locks held at
 *   the steps of a cycle must be pairwise disjoint) does not.
 */
#include <reprise/ulib.h>

static struct mutex A = MUTEX_INIT("A"), B = MUTEX_INIT("B"), C = MUTEX_INIT("C"), D = MUTEX_INIT("D");

/* chain is the locks a thread takes nested, in order. */
struct chain {
	struct mutex *locks[3];
	int n;
};

static long nested(void *arg)
{
	struct chain *c = arg;
	for (int i = 0; i < c->n; i++) {
		mutex_lock(c->locks[i]);
		if (i < c->n - 1)
			sleep_ms(1);
	}
	for (int i = c->n - 1; i >= 0; i--)
		mutex_unlock(c->locks[i]);
	return 0;
}

int wl_deadlock_goodlock(const struct args *a)
{
	(void)a;
	static struct chain chains[4] = {
		{ { &A, &B }, 2 }, { { &A, &B, &C }, 3 }, { { &C, &D }, 2 }, { { &D, &A }, 2 },
	};
	static const char *const names[4] = { "T1", "N", "T3", "T4" };
	static const char *const orders[4] = { "A,B", "A,B,C", "C,D", "D,A" };
	int tid[4], bad = 0;
	for (int i = 0; i < 4; i++) {
		tid[i] = thread_create(nested, &chains[i]);
		bad |= tid[i] < 0 || thread_join(tid[i]) != 0;
	}
	truth("lock=A addr=%p", (void *)&A);
	truth("lock=B addr=%p", (void *)&B);
	truth("lock=C addr=%p", (void *)&C);
	truth("lock=D addr=%p", (void *)&D);
	for (int i = 0; i < 4; i++)
		truth("thread=%s tid=%d order=%s", names[i], tid[i], orders[i]);
	truth("expect=cycle locks=A,C,D cycle=A@N>C@N>C@T3>D@T3>D@T4>A@T4>A@N");
	truth("expect=none locks=A,B,C,D why=T1,N-hold-A cycle=A@T1>B@T1>B@N>C@N>C@T3>D@T3>D@T4>A@T4>A@T1");
	if (bad) {
		truth("result=FAIL");
		return 1;
	}
	truth("result=ok deadlocked=0");
	return 0;
}
