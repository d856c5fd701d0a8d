/* A page fault while gdb steps: deep's first touch of a stack page the
   program has not used is the last trap of the run, so the trap frame it
   leaves on the trap stub's stack is still in RAM at the end. */
#include <unistd.h>

static void deep(void) {
	volatile char buf[16 * 1024];
	for (unsigned i = 0; i < sizeof buf; i += 8192)
		buf[i] = 1;
}

int main(void) {
	deep();
	write(1, "done\n", 5);
	return 0;
}
