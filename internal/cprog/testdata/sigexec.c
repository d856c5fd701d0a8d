/* A signal's handler, then an exec of the program itself, for gdb's
   catch syscall: rt_sigreturn returns where the signal came (a call
   numbered -1 by then), execve at the new image's entry. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void handler(int sig) { got = sig; }

int main(int argc, char **argv) {
	if (argc > 1) {
		printf("again %s\n", argv[1]);
		return 0;
	}
	signal(SIGUSR1, handler);
	raise(SIGUSR1);
	printf("handled %d\n", got);
	fflush(stdout);
	char *args[] = {argv[0], "x", NULL};
	execv(argv[0], args);
	return 1;
}
