// A write in a loop that computes for a while without a system call: going
// back to it with a watchpoint steps the loop one instruction at a time,
// for hours — gdb's interrupt must give that search up.
#include <stdio.h>

volatile long total;

__attribute__((noinline)) void report(void) { printf("total %ld\n", total); }

int main(void) {
	for (long i = 1; i <= 100000000; i++)
		total = i;
	report();
	return 0;
}
