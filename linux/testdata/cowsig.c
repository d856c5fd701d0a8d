#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile long alarms;
/* 9 MiB of writable pages, mapped at exec: past what reprise copies at a
   fork (personality 12 copies a smaller process's writable pages at
   once), so the fork shares them copy-on-write, which this tests. */
char ballast[9 << 20];
static void on_alarm(int s) { alarms++; }
int main(void) {
	struct sigaction sa = {0};
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, 0);
	struct itimerval it = {{0, 100}, {0, 100}};
	setitimer(ITIMER_REAL, &it, 0);
	enum { pages = 64, forks = 40 };
	char *stk = mmap(0, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < forks; i++) {
		int p[2];
		pipe(p);
		pid_t c = fork();
		if (c == 0) { char x; read(p[0], &x, 1); _exit(0); }
		for (int pg = 0; pg < pages; pg++) {
			char *top = stk + pg * 4096 + 0xff0;
			/* On a stack page shared with the child: read it, then write it. */
			__asm__ volatile("mov %%rsp, %%rbx\n\t"
					 "mov %0, %%rsp\n\t"
					 "mov (%%rsp), %%rax\n\t"
					 "push %%rax\n\t"
					 "pop %%rax\n\t"
					 "mov %%rbx, %%rsp\n\t"
					 :: "r"(top) : "rax", "rbx", "memory");
		}
		write(p[1], "x", 1);
		waitpid(c, 0, 0);
		close(p[0]);
		close(p[1]);
	}
	printf("done (%s)\n", alarms > 0 ? "signals came" : "no signals");
	return 0;
}
