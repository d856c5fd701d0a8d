/* Who the program is and what it may change, as an unprivileged user on
   Linux sees it: its ids (and setting them to themselves, or to root),
   its capabilities (none, and setting one), the CPU it may run on, clock
   resolutions, and close_range. Run natively as uid 1000 with no
   capabilities, it prints the same as under reprise. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

#include "result.h"

int main(void) {
	uid_t r, e, s;
	gid_t gr, ge, gs;
	getresuid(&r, &e, &s);
	getresgid(&gr, &ge, &gs);
	printf("uids %u %u %u gids %u %u %u\n", r, e, s, gr, ge, gs);
	result("setresuid to itself", setresuid(r, -1, r));
	result("setresuid to root", setresuid(0, 0, 0));
	result("setresgid to itself", setresgid(-1, gr, -1));
	result("setreuid to root", setreuid(-1, 0));
	result("setgid to root", setgid(0));

	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0xff, sizeof data);
	result("capget", syscall(SYS_capget, &hdr, data));
	printf("capabilities: %x %x %x %x\n", data[0].effective, data[0].permitted, data[1].effective, data[1].permitted);
	struct __user_cap_header_struct probe = {.version = 0x12345678};
	result("capget unknown version", syscall(SYS_capget, &probe, NULL));
	printf("preferred version: %#x\n", probe.version);
	memset(data, 0, sizeof data);
	result("capset none", syscall(SYS_capset, &hdr, data));
	data[0].effective = data[0].permitted = 1 << CAP_NET_BIND_SERVICE;
	result("capset one", syscall(SYS_capset, &hdr, data));

	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	result("sched_setaffinity cpu 0", sched_setaffinity(0, sizeof set, &set));
	CPU_ZERO(&set);
	result("sched_setaffinity none", sched_setaffinity(0, sizeof set, &set));
	unsigned cpu = 99;
	result("getcpu", syscall(SYS_getcpu, &cpu, NULL, NULL));
	printf("on cpu 0: %d\n", cpu == 0);

	struct timespec res;
	result("clock_getres monotonic", clock_getres(CLOCK_MONOTONIC, &res));
	printf("resolution: %ld s %ld ns\n", (long)res.tv_sec, res.tv_nsec);
	result("clock_getres bad clock", clock_getres(99, &res));

	int a = open("/proc/self/exe", O_RDONLY), b = dup(a), c = dup(a);
	result("close_range cloexec", syscall(SYS_close_range, b, c, CLOSE_RANGE_CLOEXEC));
	printf("cloexec: %d\n", (fcntl(b, F_GETFD) & FD_CLOEXEC) != 0);
	result("close_range", syscall(SYS_close_range, a, c, 0));
	result("closed", fcntl(b, F_GETFD));
	result("close_range backwards", syscall(SYS_close_range, 10, 5, 0));
	return 0;
}
