/* timerfd as programs use it, printing only what does not depend on
   timing: one-shot and periodic timers read blocking and non-blocking,
   absolute times on both clocks, gettime, disarming, a timerfd in epoll,
   and the errors. The output is the same natively and under reprise. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "result.h"

static struct itimerspec spec(long value_ns, long interval_ns) {
	struct itimerspec s = {
		.it_value = {value_ns / 1000000000, value_ns % 1000000000},
		.it_interval = {interval_ns / 1000000000, interval_ns % 1000000000},
	};
	return s;
}

int main(void) {
	uint64_t n;
	int tf = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	result("create", tf >= 0 ? 0 : -1);
	/* Long enough that it is still armed at the gettime after it on a slow
	   host (an emulated one takes milliseconds a call). */
	struct itimerspec s = spec(100000000, 0), old, cur;
	result("settime one-shot 100 ms", timerfd_settime(tf, 0, &s, &old));
	printf("old: armed %d\n", old.it_value.tv_sec || old.it_value.tv_nsec);
	timerfd_gettime(tf, &cur);
	printf("gettime: armed %d, at most 100 ms left %d, interval 0 %d\n", cur.it_value.tv_sec || cur.it_value.tv_nsec,
	       cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec <= 100000000, !cur.it_interval.tv_sec && !cur.it_interval.tv_nsec);
	result("blocking read", read(tf, &n, 8));
	printf("expirations: %llu\n", (unsigned long long)n);
	timerfd_gettime(tf, &cur);
	printf("after: armed %d\n", cur.it_value.tv_sec || cur.it_value.tv_nsec);

	int nb = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	result("non-blocking read, disarmed", read(nb, &n, 8));
	s = spec(2000000, 2000000);
	result("settime periodic 2 ms", timerfd_settime(nb, 0, &s, NULL));
	usleep(30000);
	result("read after 30 ms", read(nb, &n, 8));
	printf("periodic expirations at least 5: %d\n", n >= 5);
	s = spec(0, 0);
	result("disarm", timerfd_settime(nb, 0, &s, &old));
	printf("old interval 2 ms: %d\n", old.it_interval.tv_nsec == 2000000);
	usleep(5000);
	result("read disarmed", read(nb, &n, 8));

	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	s = spec(0, 0);
	s.it_value = now;
	s.it_value.tv_nsec += 3000000;
	if (s.it_value.tv_nsec >= 1000000000) {
		s.it_value.tv_sec++;
		s.it_value.tv_nsec -= 1000000000;
	}
	result("settime absolute monotonic", timerfd_settime(tf, TFD_TIMER_ABSTIME, &s, NULL));
	result("read absolute", read(tf, &n, 8));
	printf("expirations: %llu\n", (unsigned long long)n);

	int rt = timerfd_create(CLOCK_REALTIME, 0);
	clock_gettime(CLOCK_REALTIME, &now);
	s = spec(0, 0);
	s.it_value = now;
	s.it_value.tv_sec -= 10; /* in the past: expires at once */
	result("settime absolute realtime, past", timerfd_settime(rt, TFD_TIMER_ABSTIME, &s, NULL));
	result("read realtime", read(rt, &n, 8));
	printf("expirations: %llu\n", (unsigned long long)n);

	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 42};
	result("epoll add timerfd", epoll_ctl(ep, EPOLL_CTL_ADD, tf, &ev));
	s = spec(50000000, 0);
	timerfd_settime(tf, 0, &s, NULL);
	result("epoll_wait, nothing yet", epoll_wait(ep, &ev, 1, 0));
	int got = epoll_wait(ep, &ev, 1, 1000);
	printf("epoll_wait: %d data %llu\n", got, (unsigned long long)ev.data.u64);
	result("read after epoll", read(tf, &n, 8));

	result("create bad clock", timerfd_create(99, 0));
	result("create bad flags", timerfd_create(CLOCK_MONOTONIC, 0x4));
	s = spec(1, 0);
	s.it_value.tv_nsec = 1000000000;
	result("settime bad nsec", timerfd_settime(tf, 0, &s, NULL));
	s = spec(1000, 0);
	result("settime bad flags", timerfd_settime(tf, 0x8, &s, NULL));
	result("settime not a timerfd", timerfd_settime(ep, 0, &s, NULL));
	result("settime bad fd", timerfd_settime(99, 0, &s, NULL));
	result("short read", read(rt, &n, 4));
	result("write", write(tf, &n, 8));
	return 0;
}
