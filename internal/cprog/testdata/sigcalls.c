/* Calls a signal's handler interrupts, for gdb's catch syscall: each
   returns to the debugger first with the code Linux's syscall-exit stop
   shows (-ERESTARTSYS for a pipe's read, -ERESTARTNOHAND for pause,
   -ERESTART_RESTARTBLOCK for a relative sleep), then the handler runs,
   and each fails with EINTR (no SA_RESTART). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void handler(int sig) { (void)sig; }

/* soon has SIGALRM come in 50 ms, while the next call waits. */
static void soon(void) {
	struct itimerval it = {.it_value = {.tv_usec = 50000}};
	setitimer(ITIMER_REAL, &it, NULL);
}

int main(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigaction(SIGALRM, &sa, NULL);
	int p[2];
	if (pipe(p) != 0)
		return 1;
	char c;
	soon();
	ssize_t n = read(p[0], &c, 1);
	printf("read %zd %d\n", n, errno == EINTR);
	soon();
	pause();
	printf("pause %d\n", errno == EINTR);
	struct timespec ts = {5, 0};
	soon();
	int r = nanosleep(&ts, NULL);
	printf("sleep %d %d\n", r, errno == EINTR);
	return 0;
}
