/* A server and a client in two processes talking over three kinds of
   socket at once — TCP on the loopback, an AF_UNIX stream at an abstract
   name, a socketpair — round after round with pauses, so checkpoints fall
   while connections hold bytes in flight, a listener holds a connection
   not yet accepted, and the processes wait in poll. Prints what the
   server summed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void nap(void) {
	struct timespec ts = {0, 300 * 1000};
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 200;
	int tl = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bind(tl, (struct sockaddr *)&a, sizeof a);
	listen(tl, 4);
	socklen_t al = sizeof a;
	getsockname(tl, (struct sockaddr *)&a, &al);
	int ul = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un u = {.sun_family = AF_UNIX};
	memcpy(u.sun_path + 1, "sockloop", 8);
	socklen_t ulen = offsetof(struct sockaddr_un, sun_path) + 9;
	bind(ul, (struct sockaddr *)&u, ulen);
	listen(ul, 4);
	int pair[2];
	socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair);
	if (fork() == 0) {
		close(pair[0]);
		int t = socket(AF_INET, SOCK_STREAM, 0), s = socket(AF_UNIX, SOCK_STREAM, 0);
		connect(t, (struct sockaddr *)&a, sizeof a);
		nap();
		connect(s, (struct sockaddr *)&u, ulen);
		for (int i = 1; i <= rounds; i++) {
			int v[3] = {i, 2 * i, 3 * i};
			write(t, &v[0], sizeof v[0]);
			write(s, &v[1], sizeof v[1]);
			send(pair[1], &v[2], sizeof v[2], 0);
			if (i % 10 == 0)
				nap();
		}
		close(t);
		close(s);
		close(pair[1]);
		_exit(0);
	}
	close(pair[1]);
	int t = accept(tl, NULL, NULL), s = accept(ul, NULL, NULL);
	long sum[3] = {0, 0, 0};
	int fds[3] = {t, s, pair[0]}, open_ = 3;
	while (open_ > 0) {
		struct pollfd p[3];
		for (int i = 0; i < 3; i++)
			p[i] = (struct pollfd){fds[i], POLLIN, 0};
		poll(p, 3, -1);
		for (int i = 0; i < 3; i++) {
			if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP)))
				continue;
			int v;
			int n = read(fds[i], &v, sizeof v);
			if (n <= 0) {
				close(fds[i]);
				fds[i] = -1;
				open_--;
				continue;
			}
			sum[i] += v;
		}
	}
	wait(NULL);
	printf("tcp %ld unix %ld pair %ld\n", sum[0], sum[1], sum[2]);
	return 0;
}
