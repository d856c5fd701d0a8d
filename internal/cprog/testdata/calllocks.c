/* System calls under a lock, from several threads: each iteration takes
   counter_lock, writes and reads back a word of a file of its own
   (pwrite, pread, lseek: calls reprise can serve without an exit) and
   calls getpid, then lets the lock go. It prints the acquisitions it
   counted, as cprog.Truth reads them, and the sum it read back.

   Usage: calllocks THREADS ITERATIONS */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static int iters;
static long n_counter, sum;

static void *worker(void *arg) {
	long id = (long)arg;
	char name[32];
	snprintf(name, sizeof name, "/tmp/calllocks.%ld", id);
	int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror("open");
		exit(1);
	}
	for (long i = 0; i < iters; i++) {
		pthread_mutex_lock(&counter_lock);
		n_counter++;
		long v = i * 3 + id, back = 0;
		if (pwrite(fd, &v, sizeof v, (i % 16) * sizeof v) != sizeof v ||
		    pread(fd, &back, sizeof back, (i % 16) * sizeof v) != sizeof back) {
			perror("pwrite/pread");
			exit(1);
		}
		lseek(fd, 0, SEEK_SET);
		sum += back + (getpid() > 0);
		pthread_mutex_unlock(&counter_lock);
	}
	close(fd);
	unlink(name);
	return NULL;
}

int main(int argc, char **argv) {
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	iters = argc > 2 ? atoi(argv[2]) : 1000;
	pthread_t t[16];
	if (threads > 16)
		threads = 16;
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("truth counter_lock %ld\nsum %ld\n", n_counter, sum);
	return 0;
}
