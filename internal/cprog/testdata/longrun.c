/* A minute of guest time for the reverse-execution figure: sixty rounds
   of a little work and a second's sleep; marker() runs once, in round 30,
   half a minute before finish(). A reverse-continue from finish() to
   marker() goes 30 s of record time back. ROUNDS (argv[1]) shortens it. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

__attribute__((noinline)) void marker(int round) { sink += round; }
__attribute__((noinline)) void finish(void) { sink++; }

static void work(void) {
	for (unsigned long i = 0; i < 2000000; i++)
		sink += i ^ (i >> 3);
}

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 60;
	struct timespec second = {1, 0};
	for (int round = 0; round < rounds; round++) {
		work();
		if (round == rounds / 2)
			marker(round);
		nanosleep(&second, NULL);
	}
	finish();
	printf("rounds %d sink %lu\n", rounds, sink);
	return 0;
}
