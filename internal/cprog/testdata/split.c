/* CPU time with a known split: the same work unit, done 10 times in
   alpha for every 6 in beta, 3 in gamma and 1 in main's own loop, so
   alpha has 50% of the time, beta 30%, gamma 15% and main 5%. No system
   calls while it works: what a profiler sees is the split. A unit takes
   ~0.3 ms, a round ~6 ms: many samples of a 1 ms sampler to a round.
   (With units ten times shorter a round took ~0.6 ms, and reprise's
   samples, which land at the host's 1 kHz ticks, aliased with it: alpha's
   share varied 46.8-53.3% between runs, perf's 49.8-50.1%.)

   Usage: split ROUNDS (each round is 20 units) */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

static inline unsigned long unit(unsigned long x) {
	for (int i = 0; i < 200000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL ^ x >> 29;
	return x;
}

__attribute__((noinline)) static unsigned long alpha(unsigned long x) {
	for (int i = 0; i < 10; i++)
		x = unit(x);
	return x;
}

__attribute__((noinline)) static unsigned long beta(unsigned long x) {
	for (int i = 0; i < 6; i++)
		x = unit(x);
	return x;
}

__attribute__((noinline)) static unsigned long gamma_(unsigned long x) {
	for (int i = 0; i < 3; i++)
		x = unit(x);
	return x;
}

int main(int argc, char **argv) {
	long rounds = argc > 1 ? atol(argv[1]) : 100;
	unsigned long x = 1;
	for (long r = 0; r < rounds; r++) {
		x = alpha(x);
		x = beta(x);
		x = gamma_(x);
		x = unit(x);
	}
	sink = x;
	printf("truth alpha 50\ntruth beta 30\ntruth gamma_ 15\ntruth main 5\n");
	return 0;
}
