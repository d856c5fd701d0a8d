/*
 * shapes: a profiler's ground truth where functions reach the same work
 * through different code shapes. A unit of work is SHAPE_STEPS steps of one
 * dependent chain (a multiply, an add, a shift and a xor, each step waiting
 * for the one before), so a step takes the chain's latency however the
 * code around it is shaped: loop control and calls run beside the chain.
 * Each function does its units inline, so the time is its own (self):
 *   shape_tight  a loop of one step per iteration (many iterations, little work)
 *   shape_long   a loop of 32 steps per iteration (few iterations, long bodies)
 *   shape_deep   16 steps at each level of a recursion 16 calls deep
 *   shape_flat   the unit unrolled: straight-line code, no loop, no call
 * Per round of 10 units: tight 4 (40%), long 3 (30%), deep 2 (20%), flat 1
 * (10%). The register branch counter counts a loop head or a call: per
 * unit, tight counts 257 times, deep 16, long 9, flat once, so samples
 * taken every N counts land in proportion to those counts, not to time.
 */
#include <reprise/ulib.h>

#define NOIPA __attribute__((noipa))

enum { SHAPE_STEPS = 256, SHAPE_BODY = 32, SHAPE_DEPTH = 16 };

static volatile uint64_t sink;
static uint64_t units_tight, units_long, units_deep, units_flat;

static inline __attribute__((always_inline)) uint64_t step(uint64_t x)
{
	x = x * 2862933555777941757ULL + 3037000493ULL;
	return x ^ (x >> 31);
}

#define STEP4(x) do { x = step(x); x = step(x); x = step(x); x = step(x); } while (0)
#define STEP16(x) do { STEP4(x); STEP4(x); STEP4(x); STEP4(x); } while (0)
#define STEP32(x) do { STEP16(x); STEP16(x); } while (0)

NOIPA uint64_t shape_tight(uint64_t x);
NOIPA uint64_t shape_long(uint64_t x);
NOIPA uint64_t shape_deep(uint64_t x, int depth);
NOIPA uint64_t shape_flat(uint64_t x);
NOIPA uint64_t shape_run(uint64_t rounds);

NOIPA uint64_t shape_tight(uint64_t x)
{
	units_tight++;
#pragma GCC unroll 1
	for (int i = 0; i < SHAPE_STEPS; i++)
		x = step(x);
	return x;
}

NOIPA uint64_t shape_long(uint64_t x)
{
	units_long++;
#pragma GCC unroll 1
	for (int i = 0; i < SHAPE_STEPS / SHAPE_BODY; i++)
		STEP32(x);
	return x;
}

/* Each level does its share of the unit, then calls the next level down. */
NOIPA uint64_t shape_deep(uint64_t x, int depth)
{
	if (depth == SHAPE_DEPTH)
		units_deep++;
	STEP16(x);
	if (depth > 1) {
		x = shape_deep(x, depth - 1);
		/* not a tail call: the levels stay on the stack */
		__asm__ volatile("");
	}
	return x;
}

NOIPA uint64_t shape_flat(uint64_t x)
{
	units_flat++;
	STEP32(x); STEP32(x); STEP32(x); STEP32(x);
	STEP32(x); STEP32(x); STEP32(x); STEP32(x);
	return x;
}

/* One round: 10 units, interleaved. */
static const char round_seq[] = "tltdltfltd";

NOIPA uint64_t shape_run(uint64_t rounds)
{
	uint64_t x = 1;
	for (uint64_t r = 0; r < rounds; r++) {
		for (const char *p = round_seq; *p; p++) {
			switch (*p) {
			case 't': x = shape_tight(x); break;
			case 'l': x = shape_long(x); break;
			case 'd': x = shape_deep(x, SHAPE_DEPTH); break;
			case 'f': x = shape_flat(x); break;
			}
		}
	}
	return x;
}

int wl_shapes(const struct args *a)
{
	uint64_t rounds = arg_u64(a, "rounds", 100000);
	uint64_t x = shape_run(rounds);
	sink = x;
	truth("func=shape_tight units=%lu self_pct=40 shape=loop steps_per_iteration=1", (unsigned long)units_tight);
	truth("func=shape_long units=%lu self_pct=30 shape=loop steps_per_iteration=%d", (unsigned long)units_long, SHAPE_BODY);
	truth("func=shape_deep units=%lu self_pct=20 shape=recursion depth=%d", (unsigned long)units_deep, SHAPE_DEPTH);
	truth("func=shape_flat units=%lu self_pct=10 shape=straight-line", (unsigned long)units_flat);
	truth("rounds=%lu steps_per_unit=%d checksum=0x%lx", (unsigned long)rounds, SHAPE_STEPS, (unsigned long)x);
	if (units_tight != 4 * rounds || units_long != 3 * rounds || units_deep != 2 * rounds || units_flat != rounds) {
		truth("result=FAIL");
		return 1;
	}
	truth("result=ok");
	return 0;
}
