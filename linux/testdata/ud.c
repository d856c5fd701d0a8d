/* An invalid opcode is the program's: UD2 raises SIGILL, which its
   handler catches each time, at the faulting instruction (si_addr) — not
   retried as a stale translation's would be. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static sigjmp_buf back;
static volatile void *where;

static void onill(int sig, siginfo_t *si, void *ctx) {
	(void)ctx;
	where = si->si_addr;
	siglongjmp(back, sig);
}

extern char ud_site[];

int main(void) {
	setvbuf(stdout, NULL, _IONBF, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = onill;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGILL, &sa, NULL);
	for (int i = 0; i < 3; i++) {
		int sig = sigsetjmp(back, 1);
		if (sig == 0)
			__asm__ volatile(".globl ud_site\nud_site: ud2");
		printf("round %d: signal %d at the UD2: %d\n", i, sig, where == (void *)ud_site);
	}
	return 0;
}
