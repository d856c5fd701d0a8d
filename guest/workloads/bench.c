/*
 * bench: exit and system-call round trips, each loop bracketed by
 * HC_MARK 1 (start) and HC_MARK 2 (end), made by the kernel
 * (SYS_BENCH REPRISE_BENCH_MARK), so the host times exactly the loop.
 *   bench exit-cpl3 n=N   N `outb` to REPRISE_PORT_NULL from CPL3
 *   bench exit-cpl0 n=N   the kernel does N `outb` to REPRISE_PORT_NULL
 *   bench syscall n=N     N SYS_BENCH NOP round trips (ud2 trap + return)
 *   bench irq n=N         the kernel raises a software IRQ N times with
 *                         interrupts on: N CPL0 exits, each followed by an
 *                         injection and the kernel's IRQ path
 */
#include <reprise/ulib.h>

static void usage(void)
{
	printf("usage: bench exit-cpl3|exit-cpl0|syscall|irq [n=N]\n");
}

int wl_bench(const struct args *a)
{
	const char *mode = arg_pos(a, 0);
	int m;
	uint64_t def;
	if (!mode) {
		usage();
		return 2;
	}
	if (!strcmp(mode, "exit-cpl3")) {
		m = 3;
		def = 30000;
	} else if (!strcmp(mode, "exit-cpl0")) {
		m = 0;
		def = 150000;
	} else if (!strcmp(mode, "syscall")) {
		m = 1;
		def = 12000;
	} else if (!strcmp(mode, "irq")) {
		m = 2;
		def = 30000;
	} else {
		usage();
		return 2;
	}
	uint64_t n = arg_u64(a, "n", def);
	uint64_t t0 = clock_ns();
	bench_mark(1);
	if (m == 3) {
		for (uint64_t i = 0; i < n; i++)
			__asm__ volatile("outb %%al, %%dx" : : "a"(0), "d"(REPRISE_PORT_NULL));
	} else if (m == 0) {
		sys_bench(REPRISE_BENCH_EXIT_CPL0, (long)n);
	} else if (m == 2) {
		sys_bench(REPRISE_BENCH_IRQ, (long)n);
	} else {
		for (uint64_t i = 0; i < n; i++)
			sys_bench(REPRISE_BENCH_NOP, 0);
	}
	bench_mark(2);
	uint64_t t1 = clock_ns();
	printf("bench: %s n=%lu elapsed_ns=%lu per_op_ns=%lu (guest clock, marks included)\n",
	       mode, (unsigned long)n, (unsigned long)(t1 - t0),
	       (unsigned long)(n ? (t1 - t0) / n : 0));
	truth("mode=%s n=%lu marks=1,2", mode, (unsigned long)n);
	truth("result=ok");
	return 0;
}
