/*
 * The cpu workload's core: pi to D decimal places by Machin's formula
 * pi = 16 arctan(1/5) - 4 arctan(1/239), in base-10^9 multi-word fixed point,
 * integers only. No kernel or library dependency: the same file is built
 * into the guest kit and into the host program build/cpu-native.
 */
#ifndef CPU_CORE_H
#define CPU_CORE_H
#include <stdint.h>
#include <stddef.h>

#define CPU_DEFAULT_DIGITS 48000
#define CPU_MAX_DIGITS     200000

/* Limbs needed for `digits` decimal places (guard limbs included). */
static inline size_t cpu_pi_limbs(unsigned digits)
{
	return digits / 9 + 4;
}

/*
 * out: digits + 2 bytes, receives "3" followed by `digits` decimals and NUL.
 * term: cpu_pi_limbs(digits) uint32_t; sum: cpu_pi_limbs(digits) int64_t.
 */
void cpu_pi(char *out, unsigned digits, uint32_t *term, int64_t *sum);

/* Known digits of pi ("3" then decimals), for the self-check. */
extern const char cpu_pi_known[];
/* 0 if out matches cpu_pi_known on their common prefix, else the position
 * (1-based, counting the leading 3) of the first wrong digit. */
unsigned cpu_pi_check(const char *out);

/* The ground-truth line, printed identically by the guest and by the host
 * program: digits, first 30 digits ("3" + 29 decimals), FNV-1a 64 of the
 * whole digit string. */
#define CPU_TRUTH_FMT "truth: digits=%u first30=%s fnv=0x%016lx\n"
#endif
