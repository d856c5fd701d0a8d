/* TCP over the loopback as Linux serves it: a server on 127.0.0.1 and an
   ephemeral port, a client in a child, the addresses getsockname,
   getpeername and accept give, bytes both ways and shutdown's end of
   file, a close with bytes unread resetting the connection, a dual-stack
   AF_INET6 listener taking an IPv4 client (v4-mapped) and refusing it
   with IPV6_V6ONLY, epoll waiting for a connection, options, and the
   errors. Ports are the host's choice natively: only facts about them are
   printed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "result.h"

static int listener4(struct sockaddr_in *a) {
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(a, 0, sizeof *a);
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(l, (struct sockaddr *)a, sizeof *a) < 0 || listen(l, 8) < 0)
		return -1;
	socklen_t len = sizeof *a;
	getsockname(l, (struct sockaddr *)a, &len);
	return l;
}

int main(void) {
	setvbuf(stdout, NULL, _IONBF, 0);
	struct sockaddr_in a;
	int l = listener4(&a);
	result("listener", l >= 0 ? 0 : -1);
	printf("  bound to 127.0.0.1: %d, an ephemeral port: %d\n", a.sin_addr.s_addr == htonl(INADDR_LOOPBACK), ntohs(a.sin_port) >= 1024);
	int v;
	socklen_t vl = sizeof v;
	getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl);
	printf("  SO_ACCEPTCONN %d", v);
	getsockopt(l, SOL_SOCKET, SO_PROTOCOL, &v, &vl);
	printf(", SO_PROTOCOL %d\n", v);
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = l};
	epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
	printf("  ready before a client: %d\n", epoll_wait(ep, &ev, 1, 0));

	pid_t child = fork();
	if (child == 0) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(c, (struct sockaddr *)&a, sizeof a) < 0)
			_exit(10);
		int one = 1;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		write(c, "hello server", 12);
		shutdown(c, SHUT_WR);
		char buf[64] = {0};
		int n = 0, r;
		while ((r = read(c, buf + n, sizeof buf - 1 - n)) > 0)
			n += r;
		printf("  the client read: %s\n", buf);
		close(c);
		/* the server closes this one with bytes unread */
		c = socket(AF_INET, SOCK_STREAM, 0);
		connect(c, (struct sockaddr *)&a, sizeof a);
		write(c, "never read", 10);
		r = read(c, buf, sizeof buf);
		printf("  the client of an unread close: %d %s\n", r, r < 0 ? strerror(errno) : "");
		_exit(0);
	}
	printf("  ready with a client: %d\n", epoll_wait(ep, &ev, 1, -1));
	struct sockaddr_in peer;
	socklen_t pl = sizeof peer;
	int s = accept(l, (struct sockaddr *)&peer, &pl);
	result("accept", s >= 0 ? 0 : -1);
	printf("  the client from 127.0.0.1: %d, len %d\n", peer.sin_addr.s_addr == htonl(INADDR_LOOPBACK), pl);
	struct sockaddr_in me, them;
	socklen_t ml = sizeof me, tl = sizeof them;
	getsockname(s, (struct sockaddr *)&me, &ml);
	getpeername(s, (struct sockaddr *)&them, &tl);
	printf("  accepted on the listener's port: %d, its peer the client: %d\n", me.sin_port == a.sin_port, them.sin_port == peer.sin_port);
	char buf[64] = {0};
	int n = 0, r;
	while ((r = read(s, buf + n, sizeof buf - 1 - n)) > 0)
		n += r;
	printf("  the server read: %s, then end of file: %d\n", buf, r);
	write(s, "hello client", 12);
	close(s);
	s = accept(l, NULL, NULL);
	struct timespec pause = {0, 20 * 1000 * 1000};
	nanosleep(&pause, NULL); /* the client's bytes arrive */
	close(s);
	waitpid(child, NULL, 0);

	int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	fcntl(l, F_SETFL, O_NONBLOCK);
	result("accept none waiting", accept4(l, NULL, NULL, SOCK_NONBLOCK));
	close(l);
	result("connect once closed", connect(socket(AF_INET, SOCK_STREAM, 0), (struct sockaddr *)&a, sizeof a));
	struct sockaddr_in any = a;
	any.sin_addr.s_addr = htonl(INADDR_ANY);
	l = listener4(&a);
	any.sin_port = a.sin_port;
	int b2 = socket(AF_INET, SOCK_STREAM, 0);
	result("bind a port taken", bind(b2, (struct sockaddr *)&a, sizeof a));
	result("bind the wildcard of a port taken", bind(b2, (struct sockaddr *)&any, sizeof any));
	result("connect to the wildcard", connect(socket(AF_INET, SOCK_STREAM, 0), (struct sockaddr *)&any, sizeof any));
	result("getpeername unconnected", getpeername(c, (struct sockaddr *)&peer, &pl));
	result("bind short", bind(c, (struct sockaddr *)&a, 8));
	struct sockaddr_in6 six = {.sin6_family = AF_INET6};
	result("bind an AF_INET6 address", bind(c, (struct sockaddr *)&six, sizeof six));
	close(l);

	int l6 = socket(AF_INET6, SOCK_STREAM, 0);
	six.sin6_addr = in6addr_any;
	result("bind [::]:0", bind(l6, (struct sockaddr *)&six, sizeof six));
	listen(l6, 4);
	socklen_t sl = sizeof six;
	getsockname(l6, (struct sockaddr *)&six, &sl);
	a.sin_port = six.sin6_port;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c = socket(AF_INET, SOCK_STREAM, 0);
	result("an IPv4 client of a dual-stack listener", connect(c, (struct sockaddr *)&a, sizeof a));
	struct sockaddr_in6 p6;
	socklen_t p6l = sizeof p6;
	s = accept(l6, (struct sockaddr *)&p6, &p6l);
	printf("  seen v4-mapped: %d, len %d\n", IN6_IS_ADDR_V4MAPPED(&p6.sin6_addr), p6l);
	close(s);
	close(c);
	close(l6);
	l6 = socket(AF_INET6, SOCK_STREAM, 0);
	int one = 1;
	result("IPV6_V6ONLY", setsockopt(l6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one));
	six.sin6_port = 0;
	bind(l6, (struct sockaddr *)&six, sizeof six);
	listen(l6, 4);
	sl = sizeof six;
	getsockname(l6, (struct sockaddr *)&six, &sl);
	a.sin_port = six.sin6_port;
	result("an IPv4 client of a v6-only listener", connect(socket(AF_INET, SOCK_STREAM, 0), (struct sockaddr *)&a, sizeof a));
	six.sin6_addr = in6addr_loopback;
	result("an IPv6 client", connect(socket(AF_INET6, SOCK_STREAM, 0), (struct sockaddr *)&six, sizeof six));
	result("IPV6_V6ONLY once bound", setsockopt(l6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one));
	struct linger lg = {1, 0}, lg2;
	socklen_t lgl = sizeof lg2;
	int lc = socket(AF_INET, SOCK_STREAM, 0);
	result("SO_LINGER", setsockopt(lc, SOL_SOCKET, SO_LINGER, &lg, sizeof lg));
	getsockopt(lc, SOL_SOCKET, SO_LINGER, &lg2, &lgl);
	printf("  on %d for %d, %d bytes\n", lg2.l_onoff, lg2.l_linger, lgl);
	l = listener4(&a);
	connect(lc, (struct sockaddr *)&a, sizeof a);
	s = accept(l, NULL, NULL);
	close(lc); /* lingering no time: a reset */
	char one_byte;
	r = read(s, &one_byte, 1);
	printf("  the peer of a close lingering no time: %d %s\n", r, r < 0 ? strerror(errno) : "");
	result("SO_LINGER short", setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, 4));
	struct timeval tv = {0, 50000}, tv2;
	socklen_t tvl = sizeof tv2;
	int quiet = socket(AF_INET, SOCK_STREAM, 0);
	connect(quiet, (struct sockaddr *)&a, sizeof a);
	result("SO_RCVTIMEO", setsockopt(quiet, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
	getsockopt(quiet, SOL_SOCKET, SO_RCVTIMEO, &tv2, &tvl);
	printf("  %ld s %ld us, %d bytes\n", (long)tv2.tv_sec, (long)tv2.tv_usec, tvl);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = recv(quiet, &one_byte, 1, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long waited = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	printf("  a receive with nothing sent: %d %s, after the timeout: %d\n", r, r < 0 ? strerror(errno) : "", waited >= 45);
	tv.tv_usec = 1000000;
	result("SO_RCVTIMEO of a million microseconds", setsockopt(quiet, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
	result("SO_SNDTIMEO short", setsockopt(quiet, SOL_SOCKET, SO_SNDTIMEO, &tv, 8));
	result("a TCP option of an AF_UNIX socket", setsockopt(socket(AF_UNIX, SOCK_STREAM, 0), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
	result("socket AF_INET bad protocol", socket(AF_INET, SOCK_STREAM, IPPROTO_UDP));
	return 0;
}
