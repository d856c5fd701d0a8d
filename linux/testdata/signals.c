#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A handler that returns (SIGUSR1 by raise), one that escapes a fault
   (SIGSEGV, siglongjmp), SIGCHLD when a child exits, and a blocked signal
   delivered once unblocked. */
static volatile sig_atomic_t usr1, chld;
static sigjmp_buf env;
static double kept = 1.5;

static void on_usr1(int sig) { usr1 = sig; kept *= 2; }
static void on_chld(int sig) { (void)sig; chld++; }
static void on_segv(int sig, siginfo_t *si, void *uc) {
	(void)uc;
	printf("segv %d at %p\n", sig, si->si_addr);
	siglongjmp(env, 1);
}

int main(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	double x = 3.25;
	raise(SIGUSR1);
	printf("usr1 %d kept %.1f x %.2f\n", usr1, kept, x);

	sa.sa_handler = on_chld;
	sigaction(SIGCHLD, &sa, NULL);
	pid_t p = fork();
	if (p == 0)
		_exit(7);
	int status;
	while (waitpid(p, &status, 0) < 0)
		;
	printf("child %d chld %d\n", WEXITSTATUS(status), chld);

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	if (sigsetjmp(env, 1) == 0)
		*(volatile int *)64 = 1;
	puts("escaped the fault");

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	usr1 = 0;
	raise(SIGUSR1);
	printf("while blocked %d\n", usr1);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	printf("after unblock %d\n", usr1);
	return 0;
}
