/* cpu: CPU stress, pi by Machin's formula (core in cpu_core.c). */
#include <reprise/ulib.h>
#include "cpu_core.h"

static uint32_t term[CPU_MAX_DIGITS / 9 + 4];
static int64_t sum[CPU_MAX_DIGITS / 9 + 4];
static char out[CPU_MAX_DIGITS + 2];

int wl_cpu(const struct args *a)
{
	unsigned digits = (unsigned)arg_u64(a, "digits", CPU_DEFAULT_DIGITS);
	if (digits < 30 || digits > CPU_MAX_DIGITS) {
		printf("cpu: digits must be in [30, %u]\n", CPU_MAX_DIGITS);
		return 2;
	}
	uint64_t t0 = clock_ns();
	cpu_pi(out, digits, term, sum);
	uint64_t t1 = clock_ns();
	char first[31];
	memcpy(first, out, 30);
	first[30] = 0;
	printf(CPU_TRUTH_FMT, digits, first, (unsigned long)fnv1a64(out, digits + 1));
	unsigned bad = cpu_pi_check(out);
	printf("cpu: elapsed_ms=%lu\n", (unsigned long)((t1 - t0) / 1000000));
	if (bad) {
		truth("result=FAIL wrong_digit_at=%u", bad);
		return 1;
	}
	truth("result=ok");
	return 0;
}
