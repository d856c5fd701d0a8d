/* Shared memory as Linux shares it: MAP_SHARED|MAP_ANONYMOUS stays shared
   across fork (a counter both sides add to under a process-shared mutex,
   a process-shared condition variable); a file mapped shared is the
   file's pages (writes through the mapping seen by read, writes by write
   seen through the mapping, in another process too, and after munmap);
   shm_open and sem_open in /dev/shm across fork; memfd_create with seals;
   msync, mincore, truncate, fallocate; the errors. What is printed does
   not depend on addresses or process ids. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "result.h"

struct shared {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int ready;
	long counter;
};

static void anonymous(void) {
	struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&s->mu, &ma);
	pthread_cond_init(&s->cv, &ca);
	pid_t child = fork();
	if (child == 0) {
		for (int i = 0; i < 20000; i++) {
			pthread_mutex_lock(&s->mu);
			s->counter++;
			pthread_mutex_unlock(&s->mu);
		}
		pthread_mutex_lock(&s->mu);
		s->ready = 1;
		pthread_cond_signal(&s->cv);
		pthread_mutex_unlock(&s->mu);
		_exit(0);
	}
	for (int i = 0; i < 20000; i++) {
		pthread_mutex_lock(&s->mu);
		s->counter++;
		pthread_mutex_unlock(&s->mu);
	}
	pthread_mutex_lock(&s->mu);
	while (!s->ready)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	waitpid(child, NULL, 0);
	printf("anonymous shared counter: %ld\n", s->counter);

	munmap(s, sizeof *s);

	/* three pages, shared with a new child; shrunk by mremap */
	char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fork() == 0) {
		strcpy(p + 2 * 4096, "from the child");
		_exit(0);
	}
	wait(NULL);
	printf("after the child: %s\n", p + 2 * 4096);
	printf("mremap shrinks it: %d\n", mremap(p, 3 * 4096, 4096, 0) == p);
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[256];
	int shared = 0;
	while (fgets(line, sizeof line, maps))
		if (strstr(line, "rw-s") && strstr(line, "/dev/zero (deleted)"))
			shared++;
	fclose(maps);
	printf("shared anonymous in maps: %d\n", shared);
	munmap(p, 4096);

	/* a private mapping is not shared */
	int *q = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fork() == 0) {
		*q = 7;
		_exit(0);
	}
	wait(NULL);
	printf("private after the child: %d\n", *q);
}

static void file(void) {
	const char *path = "/tmp/reprise-shm-file";
	unlink(path);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	result("ftruncate", ftruncate(fd, 8192));
	char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	strcpy(m + 4000, "written through the mapping");
	char buf[64] = {0};
	result("pread", pread(fd, buf, 27, 4000));
	printf("read sees: %s\n", buf);
	result("pwrite", pwrite(fd, "by write", 8, 100));
	printf("mapping sees: %.8s\n", m + 100);
	if (fork() == 0) {
		int fd2 = open(path, O_RDWR);
		char *m2 = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 4096);
		strcpy(m2 + 8, "child's");
		_exit(0);
	}
	wait(NULL);
	printf("the child's write: %s\n", m + 4096 + 8);
	result("msync", msync(m, 8192, MS_SYNC));
	result("msync both", msync(m, 8192, MS_SYNC | MS_ASYNC));
	unsigned char vec[3];
	result("mincore", mincore(m, 8192, vec));
	printf("resident: %d %d\n", vec[0], vec[1]);
	result("mincore unmapped", mincore(m + 8192 * 1000, 4096, vec));
	result("truncate to a page", truncate(path, 4096));
	result("fallocate", fallocate(fd, 0, 0, 12288));
	struct stat st;
	fstat(fd, &st);
	printf("size after fallocate: %ld\n", (long)st.st_size);
	result("fallocate keep size", fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 65536));
	fstat(fd, &st);
	printf("size kept: %ld\n", (long)st.st_size);
	result("fallocate punch", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 2));
	result("fallocate punch, no keep", fallocate(fd, FALLOC_FL_PUNCH_HOLE, 100, 2));
	munmap(m, 8192);
	memset(buf, 0, sizeof buf);
	result("pread after munmap", pread(fd, buf, 8, 100));
	printf("kept, a hole punched: %c%c%s\n", buf[0] ? buf[0] : '0', buf[1] ? buf[1] : '0', buf + 2);
	result("pread past the page", pread(fd, buf, 8, 4096 + 8));
	printf("zeroed by truncate: %d\n", buf[0]);
	close(fd);

	fd = open(path, O_RDONLY);
	result("writable shared of read-only fd", (long)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
	void *r = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	printf("read-only shared: %d %s\n", r != MAP_FAILED, (char *)r + 102);
	result("validate unknown flag", (long)mmap(NULL, 4096, PROT_READ, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0));
	close(fd);
	unlink(path);
	result("truncate a directory", truncate("/tmp", 0));
	result("truncate a missing file", truncate("/tmp/reprise-no-such", 0));
}

static void posix(void) {
	int fd = shm_open("/reprise-shm", O_RDWR | O_CREAT | O_EXCL, 0600);
	result("shm_open", fd >= 0 ? 0 : -1);
	result("ftruncate", ftruncate(fd, 4096));
	int *v = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	sem_t *sem = sem_open("/reprise-sem", O_CREAT | O_EXCL, 0600, 0);
	result("sem_open", sem == SEM_FAILED ? -1 : 0);
	if (fork() == 0) {
		int fd = shm_open("/reprise-shm", O_RDWR, 0);
		int *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		*w = 42;
		sem_t *s = sem_open("/reprise-sem", 0);
		sem_post(s);
		_exit(0);
	}
	sem_wait(sem);
	printf("the child's value, after sem_wait: %d\n", *v);
	wait(NULL);
	result("shm_unlink", shm_unlink("/reprise-shm"));
	result("sem_unlink", sem_unlink("/reprise-sem"));
	printf("still mapped after unlink: %d\n", *v);
	result("shm_open after unlink", shm_open("/reprise-shm", O_RDWR, 0));
}

static void memfd(void) {
	int fd = memfd_create("reprise", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	result("memfd_create", fd >= 0 ? 0 : -1);
	char link[64] = {0}, proc[32];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	readlink(proc, link, sizeof link - 1);
	printf("its name: %s\n", link);
	result("write", write(fd, "hello memfd", 11));
	char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	printf("mapped: %s\n", m);
	m[0] = 'H';
	result("F_GET_SEALS", fcntl(fd, F_GET_SEALS));
	result("F_SEAL_WRITE while mapped writable", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE));
	munmap(m, 4096);
	result("F_SEAL_WRITE", fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK));
	result("F_GET_SEALS", fcntl(fd, F_GET_SEALS));
	result("write sealed", write(fd, "x", 1));
	result("shrink sealed", ftruncate(fd, 1));
	result("grow", ftruncate(fd, 8192));
	result("writable mapping sealed", (long)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
	char buf[12] = {0};
	result("pread", pread(fd, buf, 11, 0));
	printf("contents: %s\n", buf);
	result("F_SEAL_SEAL", fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL));
	result("seal after F_SEAL_SEAL", fcntl(fd, F_ADD_SEALS, F_SEAL_GROW));
	result("unknown seal", fcntl(fd, F_ADD_SEALS, 0x1000));
	close(fd);
	fd = memfd_create("plain", 0);
	result("F_GET_SEALS unsealable", fcntl(fd, F_GET_SEALS));
	result("F_ADD_SEALS unsealable", fcntl(fd, F_ADD_SEALS, F_SEAL_GROW));
	close(fd);
	result("memfd_create bad flags", memfd_create("x", 0x100));
	char name[300];
	memset(name, 'a', sizeof name - 1);
	name[sizeof name - 1] = 0;
	result("memfd_create long name", memfd_create(name, 0));
	result("F_GET_SEALS of a pipe", fcntl(0, F_GET_SEALS));
}

int main(void) {
	setvbuf(stdout, NULL, _IONBF, 0);
	anonymous();
	file();
	posix();
	memfd();
	return 0;
}
