/* A write right after the exit a checkpoint is taken at: main computes
   for longer than the checkpoint period without a system call, so with
   no timer ticks (record --timer-hz 0) the next checkpoint is due at
   getppid's exit, and the stretch after it sets total to 42. A replay
   from that checkpoint starts with the write ahead of it, before any
   exit: going back to it with a watchpoint must look at total from the
   restore on. */
#include <stdio.h>
#include <unistd.h>

long total;

static void spin(void) {
	for (volatile long n = 0; n < 40000000; n++)
		;
}

int main(void) {
	total = 1;
	getpid();
	spin();
	getppid();
	total = 42;
	getppid();
	printf("total %ld\n", total);
	return 0;
}
