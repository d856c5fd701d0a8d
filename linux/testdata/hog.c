#include <pthread.h>
#include <stdio.h>

/* The main thread computes for two seconds or more without a system call
   while a thread it created waits to run. */
static void *worker(void *arg) {
	(void)arg;
	puts("worker ran");
	return NULL;
}

int main(void) {
	pthread_t th;
	pthread_create(&th, NULL, worker, NULL);
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 6000000000UL; i++)
		x += i;
	pthread_join(th, NULL);
	printf("done %d\n", x != 0);
	return 0;
}
