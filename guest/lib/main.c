/* main: dispatch to the workload named by the first word of the cmdline. */
#include <reprise/ulib.h>

#define W(name, desc) int wl_##name(const struct args *a);
#include "../workloads/workloads.def"
#undef W

static const struct {
	const char *name, *desc;
	int (*fn)(const struct args *);
} workloads[] = {
#define W(name, desc) { #name, desc, wl_##name },
#include "../workloads/workloads.def"
#undef W
};

int reprise_main(const struct reprise_bootinfo *bi);

int reprise_main(const struct reprise_bootinfo *bi)
{
	static struct args a;
	args_parse(&a, bi->cmdline);
	for (size_t i = 0; i < ARRAY_SIZE(workloads); i++) {
		if (strcmp(a.name, workloads[i].name))
			continue;
		/* Bracket the workload so the host can time it apart from boot
		 * and shutdown (REPRISE_MARK_WORKLOAD_*). */
		bench_mark(REPRISE_MARK_WORKLOAD_START);
		int status = workloads[i].fn(&a);
		bench_mark(REPRISE_MARK_WORKLOAD_END);
		return status;
	}
	printf("unknown workload \"%s\"; workloads:\n", a.name);
	for (size_t i = 0; i < ARRAY_SIZE(workloads); i++)
		printf("  %-20s %s\n", workloads[i].name, workloads[i].desc);
	return 2;
}
