/* The requests Linux answers for every file, before the file's own
   ioctl: FIONBIO (libuv makes its pipes nonblocking so; node failed to
   start with ENOTTY), FIOCLEX and FIONCLEX, FIONREAD on a pipe and a
   regular file; a terminal's request on a pipe is ENOTTY. And the socket
   calls on a descriptor that is no socket: ENOTSOCK, EBADF for a closed
   one (bash asks getpeername of its standard input). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "result.h"

int main(void) {
	int p[2];
	if (pipe(p) != 0)
		return 1;
	int on = 1, off = 0, n = -1;
	result("FIONBIO on", ioctl(p[0], FIONBIO, &on));
	result("O_NONBLOCK set", (fcntl(p[0], F_GETFL) & O_NONBLOCK) != 0);
	char c;
	result("read empty", read(p[0], &c, 1));
	result("FIONBIO off", ioctl(p[0], FIONBIO, &off));
	result("O_NONBLOCK cleared", (fcntl(p[0], F_GETFL) & O_NONBLOCK) != 0);
	result("FIONREAD empty", ioctl(p[0], FIONREAD, &n));
	result("  bytes", n);
	result("write", write(p[1], "hello", 5));
	result("FIONREAD", ioctl(p[0], FIONREAD, &n));
	result("  bytes", n);
	result("FIOCLEX", ioctl(p[0], FIOCLEX));
	result("FD_CLOEXEC", fcntl(p[0], F_GETFD));
	result("FIONCLEX", ioctl(p[0], FIONCLEX));
	result("FD_CLOEXEC", fcntl(p[0], F_GETFD));
	struct termios tio;
	result("TCGETS on a pipe", ioctl(p[0], TCGETS, &tio));
	result("FIONBIO bad fd", ioctl(99, FIONBIO, &on));

	char base[] = "/tmp/ioctlsXXXXXX";
	if (!mkdtemp(base) || chdir(base) != 0)
		return 1;
	int f = open("f", O_CREAT | O_RDWR, 0644);
	result("write file", write(f, "0123456789", 10));
	lseek(f, 3, SEEK_SET);
	result("FIONREAD file", ioctl(f, FIONREAD, &n));
	result("  bytes", n);
	lseek(f, 20, SEEK_SET);
	result("FIONREAD past end", ioctl(f, FIONREAD, &n));
	result("  bytes", n);

	struct sockaddr_storage sa;
	socklen_t len = sizeof sa;
	result("getpeername pipe", getpeername(p[0], (struct sockaddr *)&sa, &len));
	result("getsockname file", getsockname(f, (struct sockaddr *)&sa, &len));
	result("getpeername closed", getpeername(99, (struct sockaddr *)&sa, &len));
	result("shutdown pipe", shutdown(p[1], SHUT_RDWR));
	result("listen file", listen(f, 1));
	result("sendto pipe", sendto(p[1], "x", 1, 0, NULL, 0));
	result("recvfrom pipe", recvfrom(p[0], &c, 1, 0, NULL, NULL));
	int v;
	len = sizeof v;
	result("getsockopt file", getsockopt(f, SOL_SOCKET, SO_TYPE, &v, &len));
	result("accept4 file", accept4(f, NULL, NULL, 0));
	return 0;
}
