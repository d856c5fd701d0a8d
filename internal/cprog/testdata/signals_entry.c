/* Two signal handlers entered from two kinds of place: SIGUSR1 on the
   return of raise's system call, SIGSEGV at a store that faults. A
   debugger stopped at a handler's first instruction steps back to the
   place the signal interrupted: the SYSCALL, the store. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>

static volatile int usr1_hits;
static sigjmp_buf env;

static void usr1(int sig) { usr1_hits += sig == SIGUSR1; }

static void segv(int sig) { siglongjmp(env, sig); }

int main(void) {
	signal(SIGUSR1, usr1);
	raise(SIGUSR1);
	signal(SIGSEGV, segv);
	int got = sigsetjmp(env, 1);
	if (got == 0)
		*(volatile int *)16 = 1; /* the store that faults */
	printf("usr1 %d segv %d\n", usr1_hits, got == SIGSEGV);
	return 0;
}
