/* Two threads and a value one of them breaks: adder() adds 1..100 to
   total under a lock, and clobber(), once total reaches 5050, overwrites
   it without the lock — the kind of bug a watchpoint and reverse
   execution find: at the end, the last write to total is the bug's. A
   barrier starts both together, so all three threads are alive when
   adder first calls add(). Main lingers 40 ms before it prints the total
   (not the 5050 it should be), so that a recording with a checkpoint
   every 10 ms has some between the bug and the end. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

long total;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;

__attribute__((noinline)) static long add(long v, long by) { return v + by; }

static void *adder(void *arg) {
	(void)arg;
	pthread_barrier_wait(&start);
	for (int i = 1; i <= 100; i++) {
		pthread_mutex_lock(&mu);
		total = add(total, i);
		pthread_mutex_unlock(&mu);
		if (i % 10 == 0)
			usleep(100);
	}
	return NULL;
}

static void *clobber(void *arg) {
	(void)arg;
	pthread_barrier_wait(&start);
	while (*(volatile long *)&total < 5050)
		usleep(50);
	total = -1; /* the bug: no lock, and a value nobody asked for */
	return NULL;
}

int main(void) {
	pthread_t a, b;
	pthread_barrier_init(&start, NULL, 3);
	pthread_create(&a, NULL, adder, NULL);
	pthread_create(&b, NULL, clobber, NULL);
	pthread_barrier_wait(&start);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	for (int k = 0; k < 20; k++)
		usleep(2000);
	printf("total %ld (want 5050)\n", total);
	return 0;
}
