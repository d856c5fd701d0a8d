/*
 * profile: a function profiler's ground truth. prof_a, prof_b, prof_c and
 * prof_d each do identical work units (the unit's loop is inlined into each,
 * so the time is their own, "self" time), called in an interleaved order:
 * per round of 20 units, prof_a 10 (50%), prof_b 6 (30%), prof_c 3 (15%) and
 * prof_d 1 (5%), prof_d being called from inside prof_c (nested: the call
 * graph is wl_profile > prof_run > prof_c > prof_d, so prof_c's total is 20%).
 * Note for samplers of the instrumented kit: samples inside
 * __sanitizer_cov_trace_pc belong to the function whose return address is
 * at [rsp].
 */
#include <reprise/ulib.h>

#define NOIPA __attribute__((noipa))

static uint64_t unit_iters;
static volatile uint64_t sink;
static uint64_t calls_a, calls_b, calls_c, calls_d;

static inline __attribute__((always_inline)) uint64_t unit(uint64_t x)
{
	for (uint64_t i = 0; i < unit_iters; i++) {
		x = x * 2862933555777941757ULL + 3037000493ULL;
		x ^= x >> 31;
	}
	return x;
}

NOIPA uint64_t prof_a(uint64_t x);
NOIPA uint64_t prof_b(uint64_t x);
NOIPA uint64_t prof_c(uint64_t x, int nested);
NOIPA uint64_t prof_d(uint64_t x);
NOIPA uint64_t prof_run(uint64_t rounds);

NOIPA uint64_t prof_a(uint64_t x)
{
	calls_a++;
	return unit(x ^ 0xa);
}

NOIPA uint64_t prof_b(uint64_t x)
{
	calls_b++;
	return unit(x ^ 0xb);
}

NOIPA uint64_t prof_d(uint64_t x)
{
	calls_d++;
	return unit(x ^ 0xd);
}

NOIPA uint64_t prof_c(uint64_t x, int nested)
{
	calls_c++;
	x = unit(x ^ 0xc);
	if (nested) {
		x = prof_d(x);
		/* not a tail call: prof_d runs inside prof_c, as the truth says */
		__asm__ volatile("");
	}
	return x;
}

/* One round (19 calls, 20 units): 10 a, 6 b, 3 c (C: with the nested d). */
static const char round_seq[] = "abacababacabaCababa";

NOIPA uint64_t prof_run(uint64_t rounds)
{
	uint64_t x = 1;
	for (uint64_t r = 0; r < rounds; r++) {
		for (const char *p = round_seq; *p; p++) {
			switch (*p) {
			case 'a': x = prof_a(x); break;
			case 'b': x = prof_b(x); break;
			case 'c': x = prof_c(x, 0); break;
			case 'C': x = prof_c(x, 1); break;
			}
		}
	}
	return x;
}

int wl_profile(const struct args *a)
{
	uint64_t rounds = arg_u64(a, "rounds", 500);
	unit_iters = arg_u64(a, "unit", 40000);
	uint64_t x = prof_run(rounds);
	sink = x;
	uint64_t total = calls_a + calls_b + calls_c + calls_d;
	truth("func=prof_a units=%lu self_pct=50 total_pct=50 caller=prof_run", (unsigned long)calls_a);
	truth("func=prof_b units=%lu self_pct=30 total_pct=30 caller=prof_run", (unsigned long)calls_b);
	truth("func=prof_c units=%lu self_pct=15 total_pct=20 caller=prof_run", (unsigned long)calls_c);
	truth("func=prof_d units=%lu self_pct=5 total_pct=5 caller=prof_c", (unsigned long)calls_d);
	truth("callgraph=wl_profile>prof_run>prof_c>prof_d rounds=%lu unit_iters=%lu units=%lu checksum=0x%lx",
	      (unsigned long)rounds, (unsigned long)unit_iters, (unsigned long)total, (unsigned long)x);
	if (calls_a != 10 * rounds || calls_b != 6 * rounds || calls_c != 3 * rounds || calls_d != rounds) {
		truth("result=FAIL");
		return 1;
	}
	truth("result=ok");
	return 0;
}
