/* A server and its client in two processes on the loopback, for what a
   capture of it shows: an HTTP request over TCP on 127.0.0.1 answered with
   a body of N bytes, the client then shutting its writing (the server
   sees end of file and closes); a connection on ::1 the server closes
   with bytes unread (a reset); three UDP pings answered with pongs.
   Ports 18431-18433. Prints what each side saw. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

enum { HTTP_PORT = 18431, RESET_PORT = 18432, UDP_PORT = 18433, UNREAD = 5000 };

static void die(const char *what) {
	perror(what);
	exit(1);
}

static int listener(int family, int port) {
	int s = socket(family, SOCK_STREAM, 0), on = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
	if (family == AF_INET) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		if (bind(s, (struct sockaddr *)&a, sizeof a) < 0)
			die("bind 127.0.0.1");
	} else {
		struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
		if (bind(s, (struct sockaddr *)&a, sizeof a) < 0)
			die("bind ::1");
	}
	if (listen(s, 4) < 0)
		die("listen");
	return s;
}

static int dial(int family, int port) {
	int s = socket(family, SOCK_STREAM, 0);
	int r;
	if (family == AF_INET) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		r = connect(s, (struct sockaddr *)&a, sizeof a);
	} else {
		struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
		r = connect(s, (struct sockaddr *)&a, sizeof a);
	}
	if (r < 0)
		die("connect");
	return s;
}

static void writeAll(int s, const char *b, size_t n) {
	while (n > 0) {
		ssize_t w = write(s, b, n);
		if (w <= 0)
			die("write");
		b += w, n -= w;
	}
}

static void serve(int tl4, int tl6, int u) {
	char req[512];
	size_t got = 0;
	int c = accept(tl4, NULL, NULL);
	while (got < sizeof req - 1 && !memmem(req, got, "\r\n\r\n", 4)) {
		ssize_t r = read(c, req + got, sizeof req - 1 - got);
		if (r <= 0)
			die("read request");
		got += r;
	}
	req[got] = 0;
	long n = 0;
	sscanf(req, "GET /loop?n=%ld", &n);
	char head[128];
	int hl = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %ld\r\n\r\n", n);
	writeAll(c, head, hl);
	char *body = malloc(n);
	for (long i = 0; i < n; i++)
		body[i] = 'a' + i % 26;
	for (long off = 0; off < n; off += 100000)
		writeAll(c, body + off, n - off < 100000 ? n - off : 100000);
	free(body);
	char rest[64];
	ssize_t r = read(c, rest, sizeof rest);
	printf("server: request %zu bytes, sent body %ld, then end of file %s\n", got, n, r == 0 ? "yes" : "no");
	close(c);

	c = accept(tl6, NULL, NULL);
	char some[100];
	r = read(c, some, sizeof some);
	usleep(20000); /* the rest of the client's write is in */
	printf("server: read %zd of %d on ::1, closing\n", r, UNREAD);
	close(c);

	for (int i = 0; i < 3; i++) {
		char b[32];
		struct sockaddr_in from;
		socklen_t fl = sizeof from;
		ssize_t m = recvfrom(u, b, sizeof b, 0, (struct sockaddr *)&from, &fl);
		if (m < 0)
			die("recvfrom");
		char pong[32];
		int pl = snprintf(pong, sizeof pong, "pong %.*s", (int)(m - 5), b + 5);
		sendto(u, pong, pl, 0, (struct sockaddr *)&from, fl);
	}
	printf("server: answered 3 pings\n");
}

static void client(long n) {
	int s = dial(AF_INET, HTTP_PORT);
	char req[64];
	int rl = snprintf(req, sizeof req, "GET /loop?n=%ld HTTP/1.1\r\nHost: lo\r\n\r\n", n);
	writeAll(s, req, rl);
	/* The whole response: the header, then n bytes after its blank line. */
	long total = 0, cap = n + 512;
	char *resp = malloc(cap), b[65536];
	ssize_t r;
	for (;;) {
		char *end = memmem(resp, total, "\r\n\r\n", 4);
		if (end && total - (end + 4 - resp) >= n)
			break;
		if (total == cap || (r = read(s, resp + total, cap - total)) <= 0)
			die("read response");
		total += r;
	}
	free(resp);
	shutdown(s, SHUT_WR);
	while ((r = read(s, b, sizeof b)) > 0)
		total += r;
	printf("client: got %ld bytes\n", total);
	close(s);

	s = dial(AF_INET6, RESET_PORT);
	char *unread = calloc(UNREAD, 1);
	writeAll(s, unread, UNREAD);
	free(unread);
	r = read(s, b, sizeof b);
	printf("client: after the server's close, read %zd (%s)\n", r, r < 0 ? strerror(errno) : "end of file");
	close(s);

	int u = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(UDP_PORT), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	for (int i = 1; i <= 3; i++) {
		char ping[16];
		int pl = snprintf(ping, sizeof ping, "ping %d", i);
		sendto(u, ping, pl, 0, (struct sockaddr *)&a, sizeof a);
		r = recv(u, b, sizeof b, 0);
		printf("client: %.*s\n", (int)r, b);
	}
	close(u);
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 300000;
	int tl4 = listener(AF_INET, HTTP_PORT), tl6 = listener(AF_INET6, RESET_PORT);
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(UDP_PORT), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(u, (struct sockaddr *)&a, sizeof a) < 0)
		die("bind udp");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		client(n);
		return 0;
	}
	serve(tl4, tl6, u);
	int status;
	waitpid(pid, &status, 0);
	return WEXITSTATUS(status);
}
