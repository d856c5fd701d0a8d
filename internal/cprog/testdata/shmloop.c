/* Two processes share memory three ways — an anonymous shared mapping, a
   file mapped shared, a memfd mapped shared — and add to counters in each
   under a process-shared mutex, the parent waiting on a process-shared
   condition variable for the child to finish: a run long enough for
   checkpoints to fall while both processes map the objects and wait on
   futexes in them. Prints the counters and the file's contents as read(2)
   sees them. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct shared {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
	long anon;
};

static void add(struct shared *s, long *file, long *mem, int rounds) {
	for (int i = 0; i < rounds; i++) {
		pthread_mutex_lock(&s->mu);
		s->anon++;
		(*file)++;
		(*mem) += 2;
		pthread_mutex_unlock(&s->mu);
		if (i % 500 == 0)
			usleep(1000);
	}
}

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 20000;
	struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&s->mu, &ma);
	pthread_cond_init(&s->cv, &ca);

	char path[] = "/tmp/shmloop-XXXXXX";
	int fd = mkstemp(path);
	unlink(path);
	ftruncate(fd, 4096);
	long *file = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int mfd = memfd_create("shmloop", 0);
	ftruncate(mfd, 8192);
	long *mem = (long *)((char *)mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0) + 4096);
	close(mfd);

	pid_t child = fork();
	if (child == 0) {
		add(s, file, mem, rounds);
		pthread_mutex_lock(&s->mu);
		s->done = 1;
		pthread_cond_signal(&s->cv);
		pthread_mutex_unlock(&s->mu);
		_exit(0);
	}
	add(s, file, mem, rounds);
	pthread_mutex_lock(&s->mu);
	while (!s->done)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	waitpid(child, NULL, 0);
	long back = 0;
	pread(fd, &back, sizeof back, 0);
	printf("anon %ld file %ld memfd %ld read %ld\n", s->anon, *file, *mem, back);
	return 0;
}
