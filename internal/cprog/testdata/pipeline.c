/* A program whose state, at any moment, spans what the Linux personality
   keeps: threads taking turns on a mutex and a condition variable, a child
   process writing to a pipe its parent blocks on, a file written and read
   back, a SIGCHLD handler, a wait for the child. A checkpoint taken
   anywhere in it must hold all of that. It prints what it saw.

   Usage: pipeline ROUNDS */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int rounds;
static long total, turns;
static volatile sig_atomic_t sigchld;

static void on_chld(int sig) {
	(void)sig;
	sigchld++;
}

static void spin(int n) {
	for (volatile int i = 0; i < n; i++)
		;
}

static void *worker(void *arg) {
	long id = (long)arg;
	for (int i = 0; i < rounds; i++) {
		pthread_mutex_lock(&lock);
		while (turns % 3 != id)
			pthread_cond_wait(&cond, &lock);
		total = total * 31 + id + i;
		turns++;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
		spin(20000);
	}
	return NULL;
}

static long digest(long d, const char *b, ssize_t n) {
	for (ssize_t i = 0; i < n; i++)
		d = d * 7 + b[i];
	return d;
}

int main(int argc, char **argv) {
	rounds = argc > 1 ? atoi(argv[1]) : 50;
	struct sigaction sa = {0};
	sa.sa_handler = on_chld;
	sigaction(SIGCHLD, &sa, NULL);
	int p[2];
	if (pipe(p) != 0)
		return 1;
	pid_t child = fork();
	if (child == 0) {
		close(p[0]);
		for (int i = 0; i < rounds; i++) {
			char line[32];
			int n = snprintf(line, sizeof line, "%d\n", i * i);
			write(p[1], line, n);
			struct timespec ts = {0, 2000000};
			nanosleep(&ts, NULL);
		}
		_exit(7);
	}
	close(p[1]);
	pthread_t t[3];
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);

	int fd = open("/tmp/pipeline.out", O_CREAT | O_WRONLY | O_TRUNC, 0644);
	char buf[256];
	long sum = 0, back = 0;
	ssize_t n;
	while ((n = read(p[0], buf, sizeof buf)) > 0) {
		write(fd, buf, n);
		sum = digest(sum, buf, n);
	}
	close(fd);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	int status;
	waitpid(child, &status, 0);
	fd = open("/tmp/pipeline.out", O_RDONLY);
	while ((n = read(fd, buf, sizeof buf)) > 0)
		back = digest(back, buf, n);
	close(fd);
	printf("pipe %ld file %ld turns %ld total %ld child %d sigchld %d\n", sum, back, turns, total,
	       WEXITSTATUS(status), sigchld > 0);
	return 0;
}
