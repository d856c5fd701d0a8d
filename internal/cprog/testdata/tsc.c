/* Two RDTSCs, which the kernel emulates (each patched to UD2 as the
   program is loaded): a debugger's stepi over the second (at the label
   second_rdtsc) stops right after it, and reverse-stepi from there goes
   back to it. Prints whether the counter went forwards. */
#include <stdio.h>
#include <x86intrin.h>

int main(void) {
	unsigned long long a = __rdtsc();
	unsigned int lo, hi;
	__asm__ volatile(".globl second_rdtsc\nsecond_rdtsc:\n\trdtsc" : "=a"(lo), "=d"(hi));
	unsigned long long b = (unsigned long long)hi << 32 | lo;
	printf("forwards %d\n", b >= a);
	return 0;
}
