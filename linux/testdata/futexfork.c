/* Two processes each join a thread whose stack, and so whose exit futex,
   is at the same address in both. The child waits first and its thread
   ends last: a wake keyed by the address alone would reach the child for
   the parent's thread, and leave the parent waiting for ever. */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void nap(long ms) {
	struct timespec ts = {ms / 1000, ms % 1000 * 1000000};
	nanosleep(&ts, 0);
}

static void *worker(void *arg) {
	nap((long)arg);
	return 0;
}

static void joinAfter(long startMs, long lifeMs) {
	nap(startMs);
	pthread_t t;
	pthread_create(&t, 0, worker, (void *)lifeMs);
	pthread_join(t, 0);
}

int main(void) {
	pid_t c = fork();
	if (c == 0) {
		joinAfter(0, 200); /* waits from 0 ms to 200 ms */
		_exit(7);
	}
	joinAfter(50, 50); /* waits from 50 ms to 100 ms */
	printf("parent joined\n");
	int status;
	waitpid(c, &status, 0);
	printf("child joined: %d\n", WEXITSTATUS(status));
	return 0;
}
