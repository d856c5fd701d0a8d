/* Lock-order inversions that never deadlock in this run — each group's
   threads run one after the other — for reprise deadlock and valgrind's
   helgrind to find from the orders alone:

     a, b         plain: one thread takes a then b, another b then a
     c, d, e      through three threads: c→d, d→e, e→c
     f, h         the same inversion, both threads inside gate: protected
     i, j         closed only by a trylock: i→j, then j→trylock(i): safe
     r, m         r is an rwlock taken for reading both ways: r→m, m→r;
                  readers do not exclude each other: no deadlock

   It prints the cycles a lock-order tool should report ("truth ..."). */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t c = PTHREAD_MUTEX_INITIALIZER, d = PTHREAD_MUTEX_INITIALIZER, e = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER, f = PTHREAD_MUTEX_INITIALIZER, h = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t i = PTHREAD_MUTEX_INITIALIZER, j = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t r = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long shared;

static void nest(pthread_mutex_t *x, pthread_mutex_t *y) {
	pthread_mutex_lock(x);
	pthread_mutex_lock(y);
	shared++;
	pthread_mutex_unlock(y);
	pthread_mutex_unlock(x);
}

static void *ab(void *arg) { (void)arg; nest(&a, &b); return NULL; }
static void *ba(void *arg) { (void)arg; nest(&b, &a); return NULL; }
static void *cd(void *arg) { (void)arg; nest(&c, &d); return NULL; }
static void *de(void *arg) { (void)arg; nest(&d, &e); return NULL; }
static void *ec(void *arg) { (void)arg; nest(&e, &c); return NULL; }

static void *gated_fh(void *arg) {
	(void)arg;
	pthread_mutex_lock(&gate);
	nest(&f, &h);
	pthread_mutex_unlock(&gate);
	return NULL;
}

static void *gated_hf(void *arg) {
	(void)arg;
	pthread_mutex_lock(&gate);
	nest(&h, &f);
	pthread_mutex_unlock(&gate);
	return NULL;
}

static void *ij(void *arg) { (void)arg; nest(&i, &j); return NULL; }

static void *j_try_i(void *arg) {
	(void)arg;
	pthread_mutex_lock(&j);
	if (pthread_mutex_trylock(&i) == 0) {
		shared++;
		pthread_mutex_unlock(&i);
	}
	pthread_mutex_unlock(&j);
	return NULL;
}

static void *rm(void *arg) {
	(void)arg;
	pthread_rwlock_rdlock(&r);
	pthread_mutex_lock(&m);
	shared++;
	pthread_mutex_unlock(&m);
	pthread_rwlock_unlock(&r);
	return NULL;
}

static void *mr(void *arg) {
	(void)arg;
	pthread_mutex_lock(&m);
	pthread_rwlock_rdlock(&r);
	shared++;
	pthread_rwlock_unlock(&r);
	pthread_mutex_unlock(&m);
	return NULL;
}

/* Each in its own thread, one after the other. */
static void *(*const steps[])(void *) = {ab, ba, cd, de, ec, gated_fh, gated_hf, ij, j_try_i, rm, mr};

int main(void) {
	for (unsigned k = 0; k < sizeof steps / sizeof steps[0]; k++) {
		pthread_t t;
		pthread_create(&t, NULL, steps[k], NULL);
		pthread_join(t, NULL);
	}
	printf("truth deadlock a,b\n");
	printf("truth deadlock c,d,e\n");
	printf("truth protected f,h gate\n");
	printf("truth trylock-safe i,j\n");
	printf("truth none r,m\n");
	printf("shared %ld\n", shared);
	return 0;
}
