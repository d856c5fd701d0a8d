#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Prints its arguments and environment, allocates, reads the clock, exits 3. */
int main(int argc, char **argv, char **envp) {
	printf("hello from %s with %d args\n", argv[0], argc);
	for (int i = 1; i < argc; i++)
		printf("arg %d: %s\n", i, argv[i]);
	for (char **e = envp; *e; e++)
		printf("env: %s\n", *e);
	size_t n = 1 << 20;
	char *big = malloc(n);
	memset(big, 'x', n);
	char *small = malloc(100);
	strcpy(small, "heap works");
	puts(small);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	printf("clock ok: %d\n", ts.tv_sec >= 0);
	free(big);
	free(small);
	return 3;
}
