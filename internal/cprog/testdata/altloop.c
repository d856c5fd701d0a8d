/* A handler installed with SA_ONSTACK runs on the thread's alternate
   stack at every one of many signals, between system calls: a replay
   restored from any checkpoint must find the stack still set. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { size = 64 * 1024, rounds = 1000 };
static char *alt;
static volatile long on, off;

static void onUSR1(int sig) {
	char local;
	if ((uintptr_t)&local >= (uintptr_t)alt && (uintptr_t)&local < (uintptr_t)alt + size)
		on++;
	else
		off++;
}

int main(void) {
	alt = malloc(size);
	stack_t ss = {.ss_sp = alt, .ss_size = size};
	sigaltstack(&ss, 0);
	struct sigaction sa = {0};
	sa.sa_handler = onUSR1;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR1, &sa, 0);
	for (int i = 0; i < rounds; i++) {
		raise(SIGUSR1);
		getppid();
	}
	printf("on the alternate stack: %ld of %d, off it: %ld\n", on, rounds, off);
	return off != 0;
}
