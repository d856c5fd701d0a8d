/*
 * build/cpu-native: the cpu workload's core (workloads/cpu_core.c, built
 * with the guest's flags) as a host program, for the guest-vs-native
 * benchmark. Prints the same truth line as the guest, then the elapsed time.
 * Usage: cpu-native [digits=N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <reprise/fnv.h>
#include "../workloads/cpu_core.h"

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv)
{
	unsigned digits = CPU_DEFAULT_DIGITS;
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "digits=", 7)) {
			digits = (unsigned)strtoul(argv[i] + 7, 0, 0);
		} else {
			fprintf(stderr, "usage: %s [digits=N]\n", argv[0]);
			return 2;
		}
	}
	if (digits < 30 || digits > CPU_MAX_DIGITS) {
		fprintf(stderr, "digits must be in [30, %u]\n", CPU_MAX_DIGITS);
		return 2;
	}
	size_t n = cpu_pi_limbs(digits);
	uint32_t *term = malloc(n * sizeof *term);
	int64_t *sum = malloc(n * sizeof *sum);
	char *out = malloc(digits + 2);
	if (!term || !sum || !out)
		return 1;
	uint64_t t0 = now_ns();
	cpu_pi(out, digits, term, sum);
	uint64_t t1 = now_ns();
	char first[31];
	memcpy(first, out, 30);
	first[30] = 0;
	printf(CPU_TRUTH_FMT, digits, first, (unsigned long)fnv1a64(out, digits + 1));
	unsigned bad = cpu_pi_check(out);
	if (bad)
		printf("truth: result=FAIL wrong_digit_at=%u\n", bad);
	else
		printf("truth: result=ok\n");
	printf("elapsed_ns=%lu elapsed_ms=%lu\n", (unsigned long)(t1 - t0),
	       (unsigned long)((t1 - t0) / 1000000));
	return bad ? 1 : 0;
}
