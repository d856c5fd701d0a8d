/* POSIX timers as programs use them, printing only what does not depend
   on timing: a signal with its siginfo, a timer aimed at one thread, a
   timer that notifies no one, overruns while the signal is blocked,
   gettime and delete, and the errors. The output is the same natively and
   under reprise. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "result.h"

static volatile int hits, code, value, on_thread, overrun;
static volatile pid_t worker_tid, hit_tid;

static void handler(int sig, siginfo_t *si, void *ctx) {
	(void)sig;
	(void)ctx;
	code = si->si_code;
	value = si->si_value.sival_int;
	overrun = si->si_overrun;
	hit_tid = (pid_t)syscall(SYS_gettid);
	hits++; /* last: main reads the rest once it sees it, maybe while the
	           handler's thread waits at its gettid */
}

static struct itimerspec spec(long value_ns, long interval_ns) {
	struct itimerspec s = {
		.it_value = {value_ns / 1000000000, value_ns % 1000000000},
		.it_interval = {interval_ns / 1000000000, interval_ns % 1000000000},
	};
	return s;
}

static volatile int stop;

static void *worker(void *arg) {
	(void)arg;
	worker_tid = (pid_t)syscall(SYS_gettid);
	while (!stop)
		usleep(1000);
	return NULL;
}

int main(void) {
	struct sigaction sa = {.sa_sigaction = handler, .sa_flags = SA_SIGINFO};
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGRTMIN, &sa, NULL);

	timer_t t1;
	struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1, .sigev_value.sival_int = 77};
	result("create", timer_create(CLOCK_MONOTONIC, &ev, &t1));
	struct itimerspec s = spec(5000000, 0), cur;
	result("settime 5 ms", timer_settime(t1, 0, &s, NULL));
	while (hits == 0)
		usleep(1000);
	printf("signal: hits %d code SI_TIMER %d value %d\n", hits, code == SI_TIMER, value);
	timer_gettime(t1, &cur);
	printf("after: armed %d\n", cur.it_value.tv_sec || cur.it_value.tv_nsec);

	pthread_t th;
	pthread_create(&th, NULL, worker, NULL);
	while (worker_tid == 0)
		usleep(1000);
	timer_t t2;
	struct sigevent tev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGRTMIN, .sigev_value.sival_int = 5};
	tev._sigev_un._tid = worker_tid;
	result("create for a thread", timer_create(CLOCK_REALTIME, &tev, &t2));
	s = spec(3000000, 0);
	hits = 0;
	result("settime", timer_settime(t2, 0, &s, NULL));
	while (hits == 0)
		usleep(1000);
	printf("to the thread: %d value %d\n", hit_tid == worker_tid, value);
	stop = 1;
	pthread_join(th, NULL);

	timer_t t3;
	struct sigevent nev = {.sigev_notify = SIGEV_NONE};
	result("create, no notice", timer_create(CLOCK_MONOTONIC, &nev, &t3));
	s = spec(1000000000, 0);
	timer_settime(t3, 0, &s, NULL);
	timer_gettime(t3, &cur);
	printf("gettime: at most 1 s left %d\n", cur.it_value.tv_sec == 0 || (cur.it_value.tv_sec == 1 && cur.it_value.tv_nsec == 0));
	s = spec(0, 0);
	struct itimerspec old;
	result("disarm", timer_settime(t3, 0, &s, &old));
	printf("old: armed %d\n", old.it_value.tv_sec || old.it_value.tv_nsec);

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	hits = 0;
	s = spec(2000000, 2000000);
	timer_settime(t1, 0, &s, NULL);
	usleep(40000);
	sigprocmask(SIG_UNBLOCK, &set, NULL); /* while armed: Linux drops the signal of a timer set again */
	int first_overrun = overrun, first_getoverrun = timer_getoverrun(t1);
	s = spec(0, 0);
	timer_settime(t1, 0, &s, NULL);
	printf("blocked, then delivered: %d, overruns counted: %d\n", hits >= 1, first_overrun > 0);
	printf("getoverrun counted: %d\n", first_getoverrun > 0);

	result("delete", timer_delete(t1));
	result("delete again", timer_delete(t1));
	result("settime deleted", timer_settime(t1, 0, &s, NULL));
	timer_t bad;
	result("create bad clock", timer_create(99, NULL, &bad));
	struct sigevent zero = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = 0};
	result("create signal 0", timer_create(CLOCK_MONOTONIC, &zero, &bad));
	struct sigevent notid = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR1};
	notid._sigev_un._tid = 99999;
	result("create for no thread", timer_create(CLOCK_MONOTONIC, &notid, &bad));
	result("create default", timer_create(CLOCK_MONOTONIC, NULL, &bad));
	return 0;
}
