#include <poll.h>
#include <stdio.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* poll on a pipe: a timeout with nothing written, data a child writes
   later, and the hang-up when it is gone; select's timeout and ready set. */
int main(void) {
	int p[2];
	pipe(p);
	struct pollfd fd = {.fd = p[0], .events = POLLIN};
	printf("empty: %d\n", poll(&fd, 1, 30));
	pid_t c = fork();
	if (c == 0) {
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
		write(p[1], "hi", 2);
		_exit(0);
	}
	close(p[1]);
	int n = poll(&fd, 1, 5000);
	char buf[8];
	printf("ready: %d in %d read %zd\n", n, (fd.revents & POLLIN) != 0, read(p[0], buf, sizeof buf));
	waitpid(c, NULL, 0);
	n = poll(&fd, 1, 5000);
	printf("gone: %d hup %d\n", n, (fd.revents & POLLHUP) != 0);

	int q[2];
	pipe(q);
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(q[0], &rd);
	struct timeval tv = {0, 30000};
	n = select(q[0] + 1, &rd, NULL, NULL, &tv);
	printf("select empty: %d set %d\n", n, FD_ISSET(q[0], &rd));
	write(q[1], "x", 1);
	FD_SET(q[0], &rd);
	n = select(q[0] + 1, &rd, NULL, NULL, NULL);
	printf("select ready: %d set %d\n", n, FD_ISSET(q[0], &rd));
	return 0;
}
