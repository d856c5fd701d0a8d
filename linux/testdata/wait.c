#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* waitid's siginfo for a child that exits and one killed; sigsuspend
   waiting for SIGCHLD with the mask it gives, the old one back after. */
static volatile sig_atomic_t got;
static void on_chld(int sig) { (void)sig; got++; }

int main(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_chld;
	sigaction(SIGCHLD, &sa, NULL);
	sigset_t block, old, none;
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &old);
	pid_t a = fork();
	if (a == 0)
		_exit(5);
	/* The child is gone, its SIGCHLD pending and blocked, before
	   sigsuspend unblocks it: sigsuspend takes the pending signal at once. */
	siginfo_t early;
	waitid(P_PID, a, &early, WEXITED | WNOWAIT);
	sigemptyset(&none);
	while (!got)
		sigsuspend(&none);
	sigset_t now;
	sigprocmask(SIG_BLOCK, NULL, &now);
	printf("suspended: got %d, SIGCHLD still blocked %d\n", got, sigismember(&now, SIGCHLD));
	siginfo_t si;
	memset(&si, 0, sizeof si);
	waitid(P_PID, a, &si, WEXITED);
	printf("exited: code %d status %d pid ok %d\n", si.si_code, si.si_status, si.si_pid == a);
	pid_t b = fork();
	if (b == 0) {
		for (;;)
			pause();
	}
	kill(b, SIGTERM);
	memset(&si, 0, sizeof si);
	waitid(P_ALL, 0, &si, WEXITED);
	printf("killed: code %d status %d\n", si.si_code, si.si_status);
	return 0;
}
