// Long-running and memory-hungry loops, as a hostile program runs them:
// each mode prints how far it got and the errno it met, so the host's
// run and the personality's can be compared.
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int loop_mmap(long n) {
	for (long i = 0; i < n; i++) {
		char *p = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			printf("mmap failed at %ld: %s\n", i, strerror(errno));
			return 1;
		}
		p[i % (1 << 20)] = 1;
		if (munmap(p, 1 << 20) != 0) {
			printf("munmap failed at %ld: %s\n", i, strerror(errno));
			return 1;
		}
	}
	printf("mmap+munmap %ld ok\n", n);
	return 0;
}

static int loop_malloc(long n) {
	for (long i = 0; i < n; i++) {
		char *p = malloc(200000);
		if (!p) {
			printf("malloc failed at %ld: %s\n", i, strerror(errno));
			return 1;
		}
		memset(p, i, 200000);
		free(p);
	}
	printf("malloc+free %ld ok\n", n);
	return 0;
}

static int loop_fork(long n) {
	for (long i = 0; i < n; i++) {
		pid_t c = fork();
		if (c < 0) {
			printf("fork failed at %ld: %s\n", i, strerror(errno));
			return 1;
		}
		if (c == 0)
			_exit(i & 0x7f);
		int st;
		if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != (i & 0x7f)) {
			printf("wait failed at %ld: %s\n", i, strerror(errno));
			return 1;
		}
	}
	printf("fork+wait %ld ok\n", n);
	return 0;
}

// exhaust maps memory until the kernel says no, then checks that what
// needs memory fails with ENOMEM and that freeing it brings it back.
static int exhaust(void) {
	static char *big[4096], *small[65536];
	int nb = 0, ns = 0;
	while (nb < 4096 && (big[nb] = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) != MAP_FAILED)
		big[nb++][0] = 1;
	printf("mmap 1 MiB: %s\n", nb < 4096 ? strerror(errno) : "never failed");
	while (ns < 65536 && (small[ns] = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) != MAP_FAILED)
		small[ns++][0] = 1;
	printf("mmap 4 KiB: %s\n", ns < 65536 ? strerror(errno) : "never failed");
	int r = munmap(big[0] + 4096, 4096); // a split, in tables never copied since
	printf("munmap inside: %s\n", r == 0 ? "ok" : strerror(errno));
	pid_t c = fork();
	if (c == 0)
		_exit(3);
	int st = 0;
	if (c > 0)
		waitpid(c, &st, 0);
	printf("fork: %s\n", c > 0 ? (WEXITSTATUS(st) == 3 ? "ok" : "bad status") : strerror(errno));
	for (int i = 0; i < ns; i++)
		munmap(small[i], 4096);
	for (int i = 0; i < nb; i++)
		munmap(big[i], 1 << 20);
	char *p = mmap(0, 32 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		printf("after freeing: %s\n", strerror(errno));
		return 1;
	}
	memset(p, 1, 32 << 20);
	printf("after freeing: 32 MiB ok\n");
	return 0;
}

// maps makes one-page mappings with gaps between them (so none merge)
// until the kernel refuses one: vm.max_map_count.
static int maps(void) {
	char *base = (char *)0x200000000;
	char *first = mmap(base, 3 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (first != base) {
		printf("first mapping: %s\n", strerror(errno));
		return 1;
	}
	long n = 0;
	for (;; n++) {
		char *at = base + (n + 2) * 2 * 4096;
		char *p = mmap(at, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != at)
			break;
		if (n > 100000) {
			printf("no limit\n");
			return 1;
		}
	}
	int e = errno;
	printf("mappings %ld, then %s\n", n + 1, strerror(e));
	int r = munmap(first + 4096, 4096);
	printf("munmap split at the limit: %s\n", r == 0 ? "ok" : strerror(errno));
	for (long i = 0; i < 3; i++)
		munmap(base + (i + 2) * 2 * 4096, 4096);
	r = munmap(first + 4096, 4096);
	printf("munmap split below it: %s\n", r == 0 ? "ok" : strerror(errno));
	return 0;
}

// top grows the mapping at the top of user space past it, in place and
// moving. Under the personality that page is the stack's (as on a host
// without address randomisation), so it is left where it is.
static int top(void) {
	char *p = (char *)0x7ffffffff000 - 4096;
	if (mprotect(p, 4096, PROT_READ | PROT_WRITE) != 0 && mmap(p, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p) {
		printf("mmap at the top: %s\n", strerror(errno));
		return 1;
	}
	void *q = mremap(p, 4096, 2 * 4096, 0);
	printf("mremap in place past the top: %s\n", q == MAP_FAILED ? strerror(errno) : "grew");
	q = mremap(p, 4096, 1L << 46, 0);
	printf("mremap 64 TiB in place: %s\n", q == MAP_FAILED ? strerror(errno) : "grew");
	q = mremap(p, 4096, 1L << 47, MREMAP_MAYMOVE);
	printf("mremap 128 TiB moving: %s\n", q == MAP_FAILED ? strerror(errno) : "moved");
	return 0;
}

// none moves a PROT_NONE mapping that holds data; it keeps it.
static int none(void) {
	char *p = mmap(0, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	strcpy(p, "kept");
	strcpy(p + 4096, "both");
	mprotect(p, 2 * 4096, PROT_NONE); // the third page, still mapped, makes growing move it
	char *q = mremap(p, 2 * 4096, 4 * 4096, MREMAP_MAYMOVE);
	if (q == MAP_FAILED) {
		printf("mremap PROT_NONE: %s\n", strerror(errno));
		return 1;
	}
	mprotect(q, 4 * 4096, PROT_READ);
	printf("mremap PROT_NONE: moved %d, %s %s, tail %d\n", q != p, q, q + 4096, q[3 * 4096]);
	return 0;
}

int main(int argc, char **argv) {
	setvbuf(stdout, 0, _IONBF, 0);
	if (argc < 2)
		return 2;
	long n = argc > 2 ? atol(argv[2]) : 0;
	if (!strcmp(argv[1], "mmap"))
		return loop_mmap(n);
	if (!strcmp(argv[1], "malloc"))
		return loop_malloc(n);
	if (!strcmp(argv[1], "fork"))
		return loop_fork(n);
	if (!strcmp(argv[1], "exhaust"))
		return exhaust();
	if (!strcmp(argv[1], "maps"))
		return maps();
	if (!strcmp(argv[1], "top"))
		return top();
	if (!strcmp(argv[1], "none"))
		return none();
	return 2;
}
