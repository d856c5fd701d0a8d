/* Datagrams by address as Linux serves them: UDP over the loopback
   (sendto, recvfrom's sender, an unbound sender bound on its first send,
   connect as a default destination and a filter, ECONNREFUSED for a
   connected socket's datagram to a port nothing has, connect's source
   address as getaddrinfo's sorting reads it, AF_UNSPEC disconnecting, a
   dual-stack AF_INET6 socket hearing IPv4 v4-mapped, MSG_TRUNC, EMSGSIZE),
   and AF_UNIX datagram sockets at a path and an abstract name (a named
   and an unnamed sender, replies by name, a connected receiver refusing
   others with EPERM, ENOENT and ECONNREFUSED). Ports are the host's
   choice natively: only facts about them are printed. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "result.h"

static int udp4(struct sockaddr_in *a) {
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(a, 0, sizeof *a);
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s, (struct sockaddr *)a, sizeof *a) < 0)
		return -1;
	socklen_t len = sizeof *a;
	getsockname(s, (struct sockaddr *)a, &len);
	return s;
}

static struct sockaddr_un named(const char *path, socklen_t *len, int abstract) {
	struct sockaddr_un u = {.sun_family = AF_UNIX};
	if (abstract) {
		memcpy(u.sun_path + 1, path, strlen(path));
		*len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path);
	} else {
		strcpy(u.sun_path, path);
		*len = sizeof u;
	}
	return u;
}

int main(void) {
	setvbuf(stdout, NULL, _IONBF, 0);
	char buf[128];
	struct sockaddr_in srv, c, from;
	socklen_t len;
	int s = udp4(&srv);
	result("udp bound", s >= 0 && srv.sin_port != 0);

	int u = socket(AF_INET, SOCK_DGRAM, 0);
	len = sizeof c;
	getsockname(u, (struct sockaddr *)&c, &len);
	result("unbound port", ntohs(c.sin_port));
	result("sendto", sendto(u, "ping", 4, 0, (struct sockaddr *)&srv, sizeof srv));
	getsockname(u, (struct sockaddr *)&c, &len);
	result("sender bound on send", c.sin_port != 0 && c.sin_addr.s_addr == htonl(INADDR_ANY));
	len = sizeof from;
	ssize_t n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &len);
	result("recvfrom", n);
	result("from the sender's port, 127.0.0.1", from.sin_port == c.sin_port && from.sin_addr.s_addr == htonl(INADDR_LOOPBACK) && len == sizeof from);
	result("reply", sendto(s, "pong", 4, 0, (struct sockaddr *)&from, len));
	n = recv(u, buf, sizeof buf, 0);
	printf("got %.*s\n", (int)n, buf);
	result("two datagrams", sendto(u, "ab", 2, 0, (struct sockaddr *)&srv, sizeof srv) + sendto(u, "cde", 3, 0, (struct sockaddr *)&srv, sizeof srv));
	result("MSG_TRUNC", recv(s, buf, 1, MSG_TRUNC));
	result("boundary kept", recv(s, buf, sizeof buf, 0));
	char big[70000] = {0};
	result("too big", sendto(u, big, sizeof big, 0, (struct sockaddr *)&srv, sizeof srv));
	result("no address", send(u, "x", 1, 0));

	/* connect: a default destination and a filter. */
	int k = socket(AF_INET, SOCK_DGRAM, 0);
	result("connect", connect(k, (struct sockaddr *)&srv, sizeof srv));
	struct sockaddr_in kl;
	len = sizeof kl;
	getsockname(k, (struct sockaddr *)&kl, &len);
	result("connected source is the loopback", kl.sin_addr.s_addr == htonl(INADDR_LOOPBACK) && kl.sin_port != 0);
	len = sizeof from;
	result("getpeername", getpeername(k, (struct sockaddr *)&from, &len) == 0 && from.sin_port == srv.sin_port);
	result("send connected", send(k, "hi", 2, 0));
	result("recv it", recv(s, buf, sizeof buf, 0));
	result("to the connected one", sendto(s, "back", 4, 0, (struct sockaddr *)&kl, sizeof kl));
	result("from another", sendto(u, "nope", 4, 0, (struct sockaddr *)&kl, sizeof kl));
	result("only the connected one heard", recv(k, buf, sizeof buf, 0));
	result("nothing else", recv(k, buf, sizeof buf, MSG_DONTWAIT));
	struct sockaddr unspec = {.sa_family = AF_UNSPEC};
	result("disconnect", connect(k, &unspec, sizeof unspec));
	len = sizeof from;
	result("getpeername disconnected", getpeername(k, (struct sockaddr *)&from, &len));

	/* A connected socket's datagram to a port nothing has. */
	struct sockaddr_in dead = srv, rl;
	int r = udp4(&rl); /* bound first: it cannot take the port closed next */
	int d = udp4(&dead);
	close(d);
	connect(r, (struct sockaddr *)&dead, sizeof dead);
	result("send to nothing", send(r, "x", 1, 0));
	struct pollfd p = {.fd = r, .events = POLLIN};
	poll(&p, 1, 1000);
	result("recv after", recv(r, buf, sizeof buf, MSG_DONTWAIT));
	result("then", recv(r, buf, sizeof buf, MSG_DONTWAIT));
	result("unconnected to nothing", sendto(u, "x", 1, 0, (struct sockaddr *)&dead, sizeof dead));
	int err = -1;
	len = sizeof err;
	getsockopt(u, SOL_SOCKET, SO_ERROR, &err, &len);
	result("SO_ERROR", err);

	/* getaddrinfo's sorting: a UDP connect to each address, then its
	   source address. */
	int g = socket(AF_INET6, SOCK_DGRAM, 0);
	struct sockaddr_in6 six = {.sin6_family = AF_INET6, .sin6_port = htons(53), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	result("connect ::1", connect(g, (struct sockaddr *)&six, sizeof six));
	len = sizeof six;
	getsockname(g, (struct sockaddr *)&six, &len);
	char txt[64];
	printf("source %s\n", inet_ntop(AF_INET6, &six.sin6_addr, txt, sizeof txt));

	/* A dual-stack socket hears IPv4 v4-mapped. */
	int v6 = socket(AF_INET6, SOCK_DGRAM, 0);
	struct sockaddr_in6 any6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
	bind(v6, (struct sockaddr *)&any6, sizeof any6);
	len = sizeof any6;
	getsockname(v6, (struct sockaddr *)&any6, &len);
	struct sockaddr_in to4 = {.sin_family = AF_INET, .sin_port = any6.sin6_port, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	result("v4 to dual-stack", sendto(u, "four", 4, 0, (struct sockaddr *)&to4, sizeof to4));
	struct sockaddr_in6 f6;
	len = sizeof f6;
	n = recvfrom(v6, buf, sizeof buf, 0, (struct sockaddr *)&f6, &len);
	printf("dual-stack got %.*s from %s\n", (int)n, buf, inet_ntop(AF_INET6, &f6.sin6_addr, txt, sizeof txt));

	/* AF_UNIX datagrams at a path and an abstract name. */
	unlink("udp-server.sock");
	socklen_t sl, cl;
	struct sockaddr_un sa = named("udp-server.sock", &sl, 0), ca = named("reprise-udp-client", &cl, 1);
	int us = socket(AF_UNIX, SOCK_DGRAM, 0), uc = socket(AF_UNIX, SOCK_DGRAM, 0), anon = socket(AF_UNIX, SOCK_DGRAM, 0);
	result("bind path", bind(us, (struct sockaddr *)&sa, sl));
	result("bind abstract", bind(uc, (struct sockaddr *)&ca, cl));
	result("sendto path", sendto(uc, "named", 5, 0, (struct sockaddr *)&sa, sl));
	struct sockaddr_un fu;
	len = sizeof fu;
	n = recvfrom(us, buf, sizeof buf, 0, (struct sockaddr *)&fu, &len);
	printf("unix got %.*s from abstract %s (len %d)\n", (int)n, buf, fu.sun_path + 1, (int)len);
	result("reply by name", sendto(us, "answer", 6, 0, (struct sockaddr *)&fu, len));
	n = recv(uc, buf, sizeof buf, 0);
	printf("client got %.*s\n", (int)n, buf);
	result("unnamed sender", sendto(anon, "anon", 4, 0, (struct sockaddr *)&sa, sl));
	len = sizeof fu;
	n = recvfrom(us, buf, sizeof buf, 0, (struct sockaddr *)&fu, &len);
	printf("from unnamed: %zd bytes, address length %d\n", n, (int)len);
	result("connect receiver to client", connect(us, (struct sockaddr *)&ca, cl));
	result("others refused", sendto(anon, "x", 1, 0, (struct sockaddr *)&sa, sl));
	result("no such path", sendto(anon, "x", 1, 0, (struct sockaddr *)&(struct sockaddr_un){.sun_family = AF_UNIX, .sun_path = "nowhere.sock"}, sizeof(struct sockaddr_un)));
	result("no such name", sendto(anon, "x", 1, 0, (struct sockaddr *)&(struct sockaddr_un){.sun_family = AF_UNIX, .sun_path = "\0reprise-none"}, offsetof(struct sockaddr_un, sun_path) + 13));
	result("send connected", send(us, "conn", 4, 0));
	result("client recv", recv(uc, buf, sizeof buf, 0));
	close(uc);
	result("to a closed receiver", send(us, "x", 1, 0));
	unlink("udp-server.sock");
	return 0;
}
