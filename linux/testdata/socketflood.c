/* A program that opens sockets in a loop until one fails: the failure is
   an errno (under reprise ENOBUFS, when every open socket's buffer
   together reaches the socket budget), the program goes on, and once it
   closes them it can open sockets again. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void) {
	static int fds[8192];
	int n = 0;
	for (; n < 8192; n++) {
		int kind = n % 3;
		fds[n] = kind == 0 ? socket(AF_INET, SOCK_STREAM, 0) : kind == 1 ? socket(AF_INET6, SOCK_DGRAM, 0) : socket(AF_UNIX, SOCK_STREAM, 0);
		if (fds[n] < 0)
			break;
	}
	printf("stopped after %d sockets: %s\n", n, n < 8192 ? strerrorname_np(errno) : "none");
	for (int i = 0; i < n; i++)
		close(fds[i]);
	int sv[2];
	printf("again: %d\n", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	return 0;
}
