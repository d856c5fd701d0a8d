/* signalfd as programs use it: blocked signals read as signalfd_siginfo
   (the sender, the code), a child's SIGCHLD seen through poll and epoll,
   a timer's signal with its value, the mask changed in place, and the
   errors. The output is the same natively and under reprise. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "result.h"

static void take(int sfd) {
	struct signalfd_siginfo si;
	ssize_t n = read(sfd, &si, sizeof si);
	if (n < 0) {
		result("read", n);
		return;
	}
	printf("read %zd: signal %s code %d from me %d\n", n, strsignal(si.ssi_signo), si.ssi_code, si.ssi_pid == (unsigned)getpid());
}

int main(void) {
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	int sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	result("signalfd", sfd < 0 ? -1 : 0);
	struct signalfd_siginfo si;
	result("read with none pending", read(sfd, &si, sizeof si));
	kill(getpid(), SIGUSR1);
	take(sfd);
	kill(getpid(), SIGTERM); /* its default ends the process: blocked, it waits to be read */
	take(sfd);

	pid_t child = fork();
	if (child == 0)
		_exit(3);
	struct pollfd p = {.fd = sfd, .events = POLLIN};
	result("poll for SIGCHLD", poll(&p, 1, 5000));
	printf("revents POLLIN: %d\n", p.revents == POLLIN);
	result("read SIGCHLD", read(sfd, &si, sizeof si));
	printf("signal %s, child's status %d, code exited %d\n", strsignal(si.ssi_signo), si.ssi_status, si.ssi_code == CLD_EXITED);
	waitpid(child, NULL, 0);

	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 7};
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	result("epoll_wait, none pending", epoll_wait(ep, &ev, 1, 0));
	kill(getpid(), SIGUSR1);
	result("epoll_wait, one pending", epoll_wait(ep, &ev, 1, 0));
	take(sfd);

	sigset_t only;
	sigemptyset(&only);
	sigaddset(&only, SIGCHLD);
	result("change the mask in place", signalfd(sfd, &only, 0) == sfd ? 0 : -1);
	kill(getpid(), SIGUSR1);
	result("read SIGUSR1 outside the mask", read(sfd, &si, sizeof si));
	result("bad size", syscall(SYS_signalfd4, -1, &set, 4, 0));
	result("bad flags", syscall(SYS_signalfd4, -1, &set, 8, 0x1));
	result("not a signalfd", signalfd(ep, &set, 0));
	result("write", write(sfd, &si, sizeof si));
	return 0;
}
