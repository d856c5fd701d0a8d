/* AF_UNIX sockets bound and connected as Linux does it: a server at a
   path and one at an abstract name, a client in a child connecting to
   each, accept4's flags, the names getsockname, getpeername and accept
   give, SO_PEERCRED both ways, a listening socket's readiness, a full
   backlog (EAGAIN), seqpacket boundaries across accept, the socket file
   (fstat, open's ENXIO, EADDRINUSE, ECONNREFUSED once its socket closed,
   bound again after unlink), autobind, and the errors. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "result.h"

static socklen_t addr_of(struct sockaddr_un *a, const char *path, int abstract) {
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	if (abstract) {
		memcpy(a->sun_path + 1, path, strlen(path));
		return offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path);
	}
	strcpy(a->sun_path, path);
	return sizeof *a;
}

static void show(const char *what, struct sockaddr_un *a, socklen_t len) {
	if (len <= offsetof(struct sockaddr_un, sun_path))
		printf("  %s: unnamed (%d)\n", what, len);
	else if (a->sun_path[0] == 0)
		printf("  %s: @%.*s (%d)\n", what, (int)(len - 3), a->sun_path + 1, len);
	else
		printf("  %s: %s (%d)\n", what, a->sun_path, len);
}

static void serve(const char *path, int abstract, int type) {
	struct sockaddr_un a, got;
	socklen_t len = addr_of(&a, path, abstract);
	int l = socket(AF_UNIX, type, 0);
	result("bind", bind(l, (struct sockaddr *)&a, len));
	result("listen", listen(l, 4));
	socklen_t gl = sizeof got;
	getsockname(l, (struct sockaddr *)&got, &gl);
	show("listening as", &got, gl);
	struct pollfd p = {l, POLLIN, 0};
	printf("  readable before a client: %d\n", poll(&p, 1, 0));
	fflush(stdout);
	pid_t child = fork();
	if (child == 0) {
		int c = socket(AF_UNIX, type, 0);
		if (connect(c, (struct sockaddr *)&a, len) < 0)
			_exit(10);
		struct ucred cred;
		socklen_t cl = sizeof cred;
		getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl);
		send(c, "one", 3, 0);
		send(c, "two", 3, 0);
		char buf[16];
		int n = recv(c, buf, sizeof buf, 0);
		_exit(cred.pid == getppid() && n == 5 ? 0 : 11);
	}
	int s = accept4(l, (struct sockaddr *)&got, &gl, SOCK_CLOEXEC | SOCK_NONBLOCK);
	while (s < 0 && errno == EAGAIN) /* the child has not connected yet */
		s = accept4(l, (struct sockaddr *)&got, (gl = sizeof got, &gl), SOCK_CLOEXEC | SOCK_NONBLOCK);
	result("accept4", s >= 0 ? 0 : -1);
	show("the client", &got, gl);
	printf("  nonblocking %d, cloexec %d\n", (fcntl(s, F_GETFL) & O_NONBLOCK) != 0, (fcntl(s, F_GETFD) & FD_CLOEXEC) != 0);
	gl = sizeof got;
	getsockname(s, (struct sockaddr *)&got, &gl);
	show("accepted as", &got, gl);
	struct ucred cred;
	socklen_t cl = sizeof cred;
	getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &cl);
	printf("  the client's pid: %d\n", cred.pid == child);
	char buf[16] = {0};
	struct pollfd q = {s, POLLIN, 0};
	poll(&q, 1, -1);
	int n = 0;
	while (n < 6) {
		int r = recv(s, buf + n, type == SOCK_SEQPACKET ? 6 : 6 - n, 0);
		if (r > 0)
			n += r;
		if (type == SOCK_SEQPACKET && r > 0)
			printf("  a message of %d\n", r);
	}
	printf("  got %s\n", buf);
	send(s, "reply", 5, 0);
	int status;
	waitpid(child, &status, 0);
	printf("  the client ends %d\n", WEXITSTATUS(status));
	close(s);
	close(l);
}

int main(void) {
	setvbuf(stdout, NULL, _IONBF, 0);
	const char *path = "/tmp/reprise-unixsock";
	unlink(path);
	serve(path, 0, SOCK_STREAM);
	struct stat st;
	result("stat the socket file", stat(path, &st));
	printf("  a socket %d\n", S_ISSOCK(st.st_mode));
	result("open it", open(path, O_RDONLY));
	struct sockaddr_un a;
	socklen_t len = addr_of(&a, path, 0);
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	result("connect once its socket closed", connect(c, (struct sockaddr *)&a, len));
	int b = socket(AF_UNIX, SOCK_STREAM, 0);
	result("bind where the file is", bind(b, (struct sockaddr *)&a, len));
	unlink(path);
	result("bind again after unlink", bind(b, (struct sockaddr *)&a, len));
	result("bind twice", bind(b, (struct sockaddr *)&a, len));
	result("listen with a negative backlog", listen(b, -1));
	int full = 0, r;
	do {
		int x = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		r = connect(x, (struct sockaddr *)&a, len);
		full += r == 0;
	} while (r == 0 && full < 100);
	printf("connections a backlog of 0 takes: %d, then %s\n", full, strerror(errno));
	close(b);
	unlink(path);
	result("connect to nothing", connect(c, (struct sockaddr *)&a, len));

	serve("reprise-abstract", 1, SOCK_SEQPACKET);
	result("connect to a closed abstract name", connect(c, (struct sockaddr *)&a, addr_of(&a, "reprise-abstract", 1)));

	int auto_ = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un fam = {.sun_family = AF_UNIX};
	result("autobind", bind(auto_, (struct sockaddr *)&fam, sizeof(sa_family_t)));
	struct sockaddr_un got;
	socklen_t gl = sizeof got;
	getsockname(auto_, (struct sockaddr *)&got, &gl);
	printf("  abstract %d, %d bytes\n", got.sun_path[0] == 0, gl);
	int d = socket(AF_UNIX, SOCK_DGRAM, 0);
	addr_of(&a, "reprise-dgram", 1);
	bind(d, (struct sockaddr *)&a, offsetof(struct sockaddr_un, sun_path) + 14);
	result("listen on a datagram socket", listen(d, 1));
	result("listen unbound", listen(socket(AF_UNIX, SOCK_STREAM, 0), 1));
	result("accept not listening", accept(auto_, NULL, NULL));
	result("bind a short address", bind(socket(AF_UNIX, SOCK_STREAM, 0), (struct sockaddr *)&fam, 1));
	int raw = socket(AF_UNIX, SOCK_RAW, 0), rt;
	socklen_t rl = sizeof rt;
	getsockopt(raw, SOL_SOCKET, SO_TYPE, &rt, &rl);
	printf("SOCK_RAW is a datagram socket: %d\n", raw >= 0 && rt == SOCK_DGRAM);
	return 0;
}
