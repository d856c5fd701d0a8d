/* epoll and eventfd as programs use them, printing what Linux answers:
   level- and edge-triggered items, one-shot, hang-ups, the item of a
   closed file going away, errors, timeouts, a thread blocked in
   epoll_wait woken by another's eventfd write, and an epoll instance
   watched by another. The output is the same natively and under reprise. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "result.h"

static void report(const char *what, int n, struct epoll_event *ev) {
	printf("%s: %d", what, n);
	if (n < 0)
		printf(" (%s)", strerror(errno));
	for (int i = 0; i < n; i++)
		printf(" [events %#x data %llu]", ev[i].events, (unsigned long long)ev[i].data.u64);
	printf("\n");
}

static int add(int ep, int fd, uint32_t events, uint64_t data) {
	struct epoll_event e = {.events = events, .data.u64 = data};
	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

/* result prints a call's result, and its error if it failed. */

static int efd;

static void *waker(void *arg) {
	(void)arg;
	usleep(20000);
	uint64_t one = 1;
	if (write(efd, &one, 8) != 8)
		printf("waker: write failed\n");
	return NULL;
}

int main(void) {
	struct epoll_event ev[8];
	int p[2];
	if (pipe(p) != 0)
		return 1;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	printf("create1: %s\n", ep >= 0 ? "ok" : strerror(errno));
	printf("add read end: %d\n", add(ep, p[0], EPOLLIN, 1));
	report("empty, timeout 0", epoll_wait(ep, ev, 8, 0), ev);
	report("empty, timeout 10 ms", epoll_wait(ep, ev, 8, 10), ev);
	if (write(p[1], "ab", 2) != 2)
		return 1;
	report("level, first", epoll_wait(ep, ev, 8, -1), ev);
	report("level, again", epoll_wait(ep, ev, 8, 0), ev);

	struct epoll_event e = {.events = EPOLLIN | EPOLLET, .data.u64 = 2};
	printf("mod to edge: %d\n", epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &e));
	report("edge, first", epoll_wait(ep, ev, 8, 0), ev);
	report("edge, again", epoll_wait(ep, ev, 8, 0), ev);
	if (write(p[1], "c", 1) != 1)
		return 1;
	report("edge, new write", epoll_wait(ep, ev, 8, 0), ev);

	e = (struct epoll_event){.events = EPOLLIN | EPOLLONESHOT, .data.u64 = 3};
	printf("mod to one-shot: %d\n", epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &e));
	report("one-shot, first", epoll_wait(ep, ev, 8, 0), ev);
	report("one-shot, again", epoll_wait(ep, ev, 8, 0), ev);

	result("add twice", add(ep, p[0], EPOLLIN, 4));
	result("mod unwatched", epoll_ctl(ep, EPOLL_CTL_MOD, p[1], &e));
	result("add itself", add(ep, ep, EPOLLIN, 5));
	int file = open("/proc/self/exe", O_RDONLY);
	result("add a regular file", add(ep, file, EPOLLIN, 6));
	result("add to a non-epoll", add(p[0], p[1], EPOLLIN, 7));
	result("bad op", epoll_ctl(ep, 99, p[0], &e));
	report("maxevents 0", epoll_wait(ep, ev, 0, 0), ev);

	printf("del: %d\n", epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));
	printf("add write end for out: %d\n", add(ep, p[1], EPOLLOUT, 8));
	printf("add read end again: %d\n", add(ep, p[0], EPOLLIN | EPOLLRDHUP, 9));
	report("both", epoll_wait(ep, ev, 8, 0), ev);
	close(p[1]);
	report("write end closed", epoll_wait(ep, ev, 8, 0), ev);
	char buf[8];
	printf("drain: %zd\n", read(p[0], buf, sizeof buf));
	report("hang-up only", epoll_wait(ep, ev, 8, 0), ev);

	efd = eventfd(0, EFD_CLOEXEC);
	result("del the hung-up pipe", epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));
	result("add eventfd", add(ep, efd, EPOLLIN, 10));
	pthread_t th;
	pthread_create(&th, NULL, waker, NULL);
	report("woken by a thread", epoll_wait(ep, ev, 1, -1), ev);
	pthread_join(th, NULL);
	uint64_t v;
	result("eventfd read", read(efd, &v, 8));
	printf("eventfd value: %llu\n", (unsigned long long)v);

	int sem = eventfd(2, EFD_SEMAPHORE | EFD_NONBLOCK);
	for (int i = 0; i < 3; i++) {
		result("semaphore read", read(sem, &v, 8));
	}
	result("eventfd short read", read(sem, buf, 4));

	int outer = epoll_create(1);
	printf("outer add inner: %d\n", add(outer, ep, EPOLLIN, 11));
	result("inner add outer", add(ep, outer, EPOLLIN, 12));
	uint64_t two = 2;
	result("eventfd write", write(efd, &two, 8));
	report("outer sees inner ready", epoll_wait(outer, ev, 8, 0), ev);
	result("add the read end again", add(ep, p[0], EPOLLIN, 13));
	close(p[0]);
	report("inner after the pipe closed", epoll_wait(ep, ev, 8, 0), ev);
	return 0;
}
