// spin: a loop in one function, named at build time (-DFN=name), so that
// two builds are one layout whose code at each address has two names.
#include <stdio.h>
#include <stdlib.h>

#ifndef FN
#define FN spin
#endif

__attribute__((noinline)) unsigned long FN(unsigned long n) {
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x += i;
	return x;
}

int main(int argc, char **argv) {
	unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 100000000;
	printf("%lu\n", FN(n));
	return 0;
}
