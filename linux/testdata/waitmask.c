/* The signal mask ppoll, pselect6 and epoll_pwait hold while they wait,
   as Linux applies it: a signal the thread blocks but the call's mask
   lets through interrupts the wait (EINTR, its handler run), and the
   thread's own mask is back afterwards; a mask that blocks it too lets
   the wait time out, the signal staying pending; a bad sigset size is
   EINVAL. The output is the same natively and under reprise. */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "result.h"

static volatile int handled;

static void on_alarm(int sig) { handled++; }

static void arm(void) {
	struct itimerval it = {{0, 0}, {0, 20000}}; /* 20 ms */
	setitimer(ITIMER_REAL, &it, NULL);
}

static void show_mask(const char *what) {
	sigset_t now;
	sigprocmask(SIG_BLOCK, NULL, &now);
	sigset_t pending;
	sigpending(&pending);
	printf("  %s: SIGALRM blocked %d, pending %d, handled %d\n", what, sigismember(&now, SIGALRM),
	       sigismember(&pending, SIGALRM), handled);
}

/* drain takes a pending SIGALRM with the mask that lets it through. */
static void drain(void) {
	sigset_t none;
	sigemptyset(&none);
	sigsuspend(&none);
}

int main(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	sigset_t alarm_set, empty;
	sigemptyset(&alarm_set);
	sigaddset(&alarm_set, SIGALRM);
	sigemptyset(&empty);
	sigprocmask(SIG_BLOCK, &alarm_set, NULL);

	int p[2];
	if (pipe(p))
		return 1;
	struct pollfd pfd = {p[0], POLLIN, 0};
	struct timespec second = {1, 0}, short_wait = {0, 60000000};

	arm();
	result("ppoll letting SIGALRM through", ppoll(&pfd, 1, &second, &empty));
	show_mask("after");
	arm();
	result("ppoll blocking it", ppoll(&pfd, 1, &short_wait, &alarm_set));
	show_mask("after");
	drain();
	result("ppoll bad size", syscall(SYS_ppoll, &pfd, 1, &second, &empty, 4));

	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	arm();
	result("pselect letting it through", pselect(p[0] + 1, &rd, NULL, NULL, &second, &empty));
	show_mask("after");
	FD_SET(p[0], &rd);
	arm();
	result("pselect blocking it", pselect(p[0] + 1, &rd, NULL, NULL, &short_wait, &alarm_set));
	show_mask("after");
	drain();

	int ep = epoll_create1(0);
	struct epoll_event ev = {EPOLLIN, {0}}, out;
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
	arm();
	result("epoll_pwait letting it through", epoll_pwait(ep, &out, 1, 1000, &empty));
	show_mask("after");
	arm();
	result("epoll_pwait blocking it", epoll_pwait(ep, &out, 1, 60, &alarm_set));
	show_mask("after");
	drain();
	result("epoll_pwait bad size", syscall(SYS_epoll_pwait, ep, &out, 1, 0, &empty, 4));

	if (write(p[1], "x", 1) != 1)
		return 1;
	arm();
	result("ppoll ready at once", ppoll(&pfd, 1, &second, &empty));
	usleep(50000); /* the alarm fires while blocked: pending, not handled */
	show_mask("after");
	drain();
	show_mask("drained");
	return 0;
}
