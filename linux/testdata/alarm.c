#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

/* An interval timer's SIGALRMs, and alarm's remaining seconds. */
static volatile sig_atomic_t alarms;
static void on_alarm(int sig) { (void)sig; alarms++; }

int main(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 20000}, {0, 20000}};
	setitimer(ITIMER_REAL, &it, NULL);
	while (alarms < 3)
		sched_yield();
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("alarms %d\n", alarms >= 3);
	printf("alarm first %u\n", alarm(5));
	printf("alarm left %u\n", alarm(0));
	return 0;
}
