/* clock: clock stress, N reads of the paravirtual clock page (InSight's
 * 10 M rdtsc workload, without rdtsc: reads are free and deterministic). */
#include <reprise/ulib.h>

int wl_clock(const struct args *a)
{
	uint64_t n = arg_u64(a, "reads", 10000000);
	if (n == 0)
		n = 1;
	uint64_t first = clock_coarse_ns(), prev = first, changes = 0, back = 0;
	for (uint64_t i = 1; i < n; i++) {
		uint64_t v = clock_coarse_ns();
		if (v != prev) {
			if (v < prev)
				back++;
			changes++;
			prev = v;
		}
	}
	truth("reads=%lu first_ns=%lu last_ns=%lu changes=%lu monotonic=%d",
	      (unsigned long)n, (unsigned long)first, (unsigned long)prev,
	      (unsigned long)changes, back == 0);
	if (back) {
		truth("result=FAIL backwards=%lu", (unsigned long)back);
		return 1;
	}
	truth("result=ok");
	return 0;
}
