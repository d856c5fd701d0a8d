/* socketpair's AF_UNIX sockets as Linux makes them: stream bytes and
   message boundaries (datagram, seqpacket), MSG_PEEK and MSG_TRUNC,
   sendmsg and recvmsg over iovecs, shutdown's end of file, poll's
   readiness, EAGAIN when nonblocking, EPIPE with MSG_NOSIGNAL and SIGPIPE
   without, a pair across fork, SO_TYPE, SO_DOMAIN, SO_PEERCRED, fstat and
   /proc/self/fd, and the errors. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "result.h"

static volatile int pipes;
static void on_pipe(int sig) { pipes++; }

static int ready(int fd) {
	struct pollfd p = {fd, POLLIN | POLLOUT, 0};
	poll(&p, 1, 0);
	return p.revents;
}

int main(void) {
	signal(SIGPIPE, on_pipe);
	int s[2];
	result("socketpair stream", socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	printf("ready before: %#x %#x\n", ready(s[0]), ready(s[1]));
	result("write", write(s[0], "hello ", 6));
	result("send", send(s[0], "world", 5, 0));
	printf("ready with bytes: %#x\n", ready(s[1]));
	char buf[64] = {0};
	result("recv peek", recv(s[1], buf, 5, MSG_PEEK));
	printf("  %s\n", buf);
	memset(buf, 0, sizeof buf);
	result("read: one stream", read(s[1], buf, sizeof buf));
	printf("  %s\n", buf);
	result("recv nonblocking, empty", recv(s[1], buf, 1, MSG_DONTWAIT));
	int type, domain;
	socklen_t len = sizeof type;
	result("SO_TYPE", getsockopt(s[0], SOL_SOCKET, SO_TYPE, &type, &len));
	len = sizeof domain;
	getsockopt(s[0], SOL_SOCKET, SO_DOMAIN, &domain, &len);
	printf("  type %d domain %d len %d\n", type, domain, len);
	struct ucred cred;
	len = sizeof cred;
	result("SO_PEERCRED", getsockopt(s[0], SOL_SOCKET, SO_PEERCRED, &cred, &len));
	printf("  pid %d, uid %d, gid %d\n", cred.pid == getpid(), cred.uid == getuid(), cred.gid == getgid());
	int size = 4096;
	result("SO_RCVBUF set", setsockopt(s[0], SOL_SOCKET, SO_RCVBUF, &size, sizeof size));
	len = sizeof size;
	getsockopt(s[0], SOL_SOCKET, SO_RCVBUF, &size, &len);
	printf("  doubled: %d\n", size);
	result("unknown option", setsockopt(s[0], SOL_SOCKET, 12345, &size, sizeof size));
	struct sockaddr_storage ss;
	len = sizeof ss;
	result("getsockname", getsockname(s[0], (struct sockaddr *)&ss, &len));
	printf("  family %d, len %d\n", ss.ss_family, len);
	len = sizeof ss;
	result("getpeername", getpeername(s[0], (struct sockaddr *)&ss, &len));
	struct stat st;
	fstat(s[0], &st);
	printf("fstat: a socket %d\n", S_ISSOCK(st.st_mode));
	char link[64] = {0}, proc[32];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", s[0]);
	readlink(proc, link, sizeof link - 1);
	printf("fd link: %.8s\n", link);
	result("connect connected", connect(s[0], (struct sockaddr *)&ss, sizeof(short)));
	result("listen connected", listen(s[0], 1));

	result("shutdown write", shutdown(s[0], SHUT_WR));
	printf("ready after shutdown: %#x\n", ready(s[1]));
	result("read at end of file", read(s[1], buf, sizeof buf));
	result("write after own shutdown (MSG_NOSIGNAL)", send(s[0], "x", 1, MSG_NOSIGNAL));
	close(s[1]);
	result("write to a closed peer", write(s[0], "x", 1));
	printf("SIGPIPEs: %d\n", pipes);
	close(s[0]);

	result("socketpair seqpacket", socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s));
	send(s[0], "first", 5, 0);
	send(s[0], "second message", 14, 0);
	send(s[0], "", 0, 0);
	memset(buf, 0, sizeof buf);
	result("recv cut short", recv(s[1], buf, 3, 0));
	printf("  %s\n", buf);
	result("recv MSG_TRUNC: its length", recv(s[1], buf, 3, MSG_TRUNC));
	result("recv an empty message", recv(s[1], buf, sizeof buf, 0));
	struct iovec iov[2] = {{"gath", 4}, {"ered", 4}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
	result("sendmsg", sendmsg(s[0], &m, 0));
	char a[3], b[3];
	struct iovec in[2] = {{a, 3}, {b, 3}};
	struct msghdr r = {.msg_iov = in, .msg_iovlen = 2};
	result("recvmsg", recvmsg(s[1], &r, 0));
	printf("  %.3s %.3s, flags %#x\n", a, b, r.msg_flags);
	struct mmsghdr vec[3];
	struct iovec out3[3] = {{"a", 1}, {"bb", 2}, {"ccc", 3}};
	memset(vec, 0, sizeof vec);
	for (int i = 0; i < 3; i++)
		vec[i].msg_hdr = (struct msghdr){.msg_iov = &out3[i], .msg_iovlen = 1};
	result("sendmmsg", sendmmsg(s[0], vec, 3, 0));
	printf("  lengths %u %u %u\n", vec[0].msg_len, vec[1].msg_len, vec[2].msg_len);
	char r3[3][8];
	struct iovec in3[3] = {{r3[0], 8}, {r3[1], 8}, {r3[2], 8}};
	memset(vec, 0, sizeof vec);
	for (int i = 0; i < 3; i++)
		vec[i].msg_hdr = (struct msghdr){.msg_iov = &in3[i], .msg_iovlen = 1};
	result("recvmmsg, waiting for one", recvmmsg(s[1], vec, 3, MSG_WAITFORONE, NULL));
	printf("  lengths %u %u %u: %.1s %.2s %.3s\n", vec[0].msg_len, vec[1].msg_len, vec[2].msg_len, r3[0], r3[1], r3[2]);
	send(s[0], "d", 1, 0);
	result("recvmmsg of fewer than asked, waiting for one", recvmmsg(s[1], vec, 3, MSG_WAITFORONE, NULL));
	close(s[0]);
	close(s[1]);

	result("socketpair datagram", socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, s));
	int sent = 0;
	while (send(s[0], buf, sizeof buf, 0) == sizeof buf)
		sent++;
	printf("datagrams until full: %d, %s\n", sent > 10, strerror(errno));
	close(s[0]);
	close(s[1]);

	result("socketpair across fork", socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	if (fork() == 0) {
		close(s[0]);
		char msg[32];
		int n = read(s[1], msg, sizeof msg);
		for (int i = 0; i < n; i++)
			msg[i] = msg[i] >= 'a' && msg[i] <= 'z' ? msg[i] - 32 : msg[i];
		write(s[1], msg, n);
		len = sizeof cred;
		getsockopt(s[1], SOL_SOCKET, SO_PEERCRED, &cred, &len);
		_exit(cred.pid == getppid() ? 0 : 1);
	}
	close(s[1]);
	write(s[0], "from the parent", 15);
	memset(buf, 0, sizeof buf);
	read(s[0], buf, sizeof buf);
	int status;
	wait(&status);
	printf("the child answered: %s, the peer's pid its parent's: %d\n", buf, WEXITSTATUS(status) == 0);

	/* SCM_RIGHTS: a pipe's read end passed to a child, which reads it */
	result("socketpair for rights", socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	int pp[2];
	pipe(pp);
	char cbuf[CMSG_SPACE(2 * sizeof(int))];
	memset(cbuf, 0, sizeof cbuf);
	struct iovec one = {"R", 1};
	struct msghdr sm = {.msg_iov = &one, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = CMSG_SPACE(sizeof(int))};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&sm);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &pp[0], sizeof(int));
	if (fork() == 0) {
		char got, rb[CMSG_SPACE(sizeof(int))];
		struct iovec in = {&got, 1};
		struct msghdr rm = {.msg_iov = &in, .msg_iovlen = 1, .msg_control = rb, .msg_controllen = sizeof rb};
		int n = recvmsg(s[1], &rm, MSG_CMSG_CLOEXEC);
		struct cmsghdr *c = CMSG_FIRSTHDR(&rm);
		int fd = -1;
		if (c && c->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(c), sizeof fd);
		char text[32] = {0};
		read(fd, text, sizeof text - 1);
		printf("  the child received %d byte, a descriptor (cloexec %d), and read: %s\n", n,
		       (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0, text);
		fflush(stdout);
		_exit(0);
	}
	result("sendmsg with SCM_RIGHTS", sendmsg(s[0], &sm, 0));
	close(pp[0]); /* the child's copy keeps the pipe open */
	write(pp[1], "through the pipe", 16);
	wait(NULL);
	/* no room for the descriptor: MSG_CTRUNC, and it is closed */
	pipe(pp);
	memcpy(CMSG_DATA(cm), &pp[0], sizeof(int));
	sendmsg(s[0], &sm, 0);
	close(pp[0]);
	char got;
	struct iovec gotv = {&got, 1};
	struct msghdr small = {.msg_iov = &gotv, .msg_iovlen = 1};
	result("recvmsg without control room", recvmsg(s[1], &small, 0));
	printf("  MSG_CTRUNC %d\n", (small.msg_flags & MSG_CTRUNC) != 0);
	result("write to the pipe whose reader went", write(pp[1], "x", 1));
	int bad = 999;
	memcpy(CMSG_DATA(cm), &bad, sizeof(int));
	result("SCM_RIGHTS of a closed descriptor", sendmsg(s[0], &sm, 0));
	cm->cmsg_type = 77;
	result("an unknown control message", sendmsg(s[0], &sm, 0));
	close(s[0]);
	close(s[1]);

	result("socketpair AF_INET", socketpair(AF_INET, SOCK_STREAM, 0, s));
	result("socketpair bad type", socketpair(AF_UNIX, 9, 0, s));
	result("socketpair bad protocol", socketpair(AF_UNIX, SOCK_STREAM, 7, s));
	int p[2];
	pipe(p);
	result("send on a pipe", send(p[1], "x", 1, 0));
	result("getsockopt on a closed fd", getsockopt(99, SOL_SOCKET, SO_TYPE, &type, &len));
	return 0;
}
