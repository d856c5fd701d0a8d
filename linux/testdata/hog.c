#include <pthread.h>
#include <stdio.h>

/* Two threads that each compute for a second or more without a system
   call: whichever runs first does so while the other waits to run. (Both
   compute, because which runs first is the scheduler's: a tick pending
   at the clone's exit runs the new thread first.) */
static unsigned long compute(void) {
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 1500000000UL; i++)
		x += i;
	return x;
}

static void *worker(void *arg) {
	(void)arg;
	compute();
	puts("worker ran");
	return NULL;
}

int main(void) {
	pthread_t th;
	pthread_create(&th, NULL, worker, NULL);
	unsigned long x = compute();
	pthread_join(th, NULL);
	printf("done %d\n", x != 0);
	return 0;
}
