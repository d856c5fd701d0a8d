#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

/* Four threads add to one counter under a mutex; thread 0 also signals a
   condition the main thread waits on. Prints the total (400000). */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;
static long counter;

static void *worker(void *arg) {
	long id = (long)arg;
	for (int i = 0; i < 100000; i++) {
		pthread_mutex_lock(&mu);
		counter++;
		pthread_mutex_unlock(&mu);
	}
	if (id == 0) {
		usleep(20000);
		pthread_mutex_lock(&mu);
		ready = 1;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

int main(void) {
	pthread_t th[4];
	for (long i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	pthread_mutex_lock(&mu);
	while (!ready)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	printf("total=%ld\n", counter);
	return 0;
}
