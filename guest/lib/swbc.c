/*
 * The software branch counter hook (DESIGN.md §4). All CPL3 code of the kit
 * is built with -fsanitize-coverage=trace-pc, which calls this at every
 * basic block; it counts in the per-vCPU swbc page and makes a synchronous
 * exit (outb to REPRISE_PORT_SWBC, opened to CPL3 by the TSS I/O bitmap)
 * when the count reaches the target the VMM wrote.
 *
 * Fast path: 5 instructions (mov, add, mov, cmp, je) + ret. No frame is
 * built (omit-frame-pointer on this one function), so a sampler whose RIP is
 * in here finds the instrumented caller's return address at [rsp], not in the
 * rbp chain.
 */
#include <reprise/abi.h>

void __sanitizer_cov_trace_pc(void);

__attribute__((no_sanitize_coverage, optimize("omit-frame-pointer")))
void __sanitizer_cov_trace_pc(void)
{
	/* Not volatile: each call loads both words anyway (memory the VMM
	 * writes only while the vCPU is stopped), and this lets the compiler
	 * fold the target load into the cmp. */
	struct reprise_swbc *s = (struct reprise_swbc *)REPRISE_SWBC;
	uint64_t c = s->count + 1;
	s->count = c;
	if (__builtin_expect(c == s->target, 0))
		__asm__ volatile("outb %%al, %%dx" : : "a"(c), "d"(REPRISE_PORT_SWBC));
}
