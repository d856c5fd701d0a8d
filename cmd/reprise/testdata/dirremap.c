/* Makes a directory with a file in it and moves, grows and shrinks
   mappings with mremap (an anonymous one and a file's), computing
   between them so that a recording's checkpoints fall after each: every
   one of them must restore. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned long spin(char *q, size_t n) {
	unsigned long sum = 0;
	for (unsigned long i = 0; i < 4000000UL; i++) {
		q[i % n] += (char)i;
		sum += (unsigned char)q[(i * 7) % n];
	}
	getpid(); /* an exit: where a checkpoint is taken */
	return sum;
}

int main(void) {
	size_t n = 1 << 20;
	unsigned long sum = 0;
	char base[] = "/tmp/dirremapXXXXXX"; /* the host's /tmp is the program's */
	if (!mkdtemp(base) || chdir(base) != 0) { perror("mkdtemp"); return 1; }
	if (mkdir("d", 0755) != 0 || mkdir("d/e", 0700) != 0) { perror("mkdir"); return 1; }
	int fd = open("d/e/f", O_RDWR | O_CREAT, 0644);
	static char blk[65536];
	memset(blk, 3, sizeof blk);
	if (fd < 0 || write(fd, blk, sizeof blk) != sizeof blk) { perror("d/e/f"); return 1; }
	char *a = mmap(0, 4 * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED) { perror("mmap"); return 1; }
	memset(a, 1, 4 * n);
	sum += spin(a, 4 * n);
	char *b = mremap(a, 4 * n, n, 0); /* shrink */
	sum += spin(b, n);
	b = mremap(b, n, 2 * n, 0); /* grow in place */
	if (b == MAP_FAILED) { perror("mremap in place"); return 1; }
	sum += spin(b, 2 * n);
	b = mremap(b, 2 * n, 8 * n, MREMAP_MAYMOVE); /* move */
	if (b == MAP_FAILED) { perror("mremap move"); return 1; }
	sum += spin(b, 8 * n);
	/* two pages of the file, and a page after them that keeps it from
	   growing in place */
	char *f = mmap(0, 12288, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f == MAP_FAILED || mmap(f, 8192, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) { perror("mmap file"); return 1; }
	char *g = mremap(f, 8192, 16384, MREMAP_MAYMOVE); /* a file's mapping moved */
	if (g == MAP_FAILED) { perror("mremap file"); return 1; }
	sum += (unsigned char)g[12000];
	sum += spin(b, 8 * n);
	struct stat st;
	if (stat("d/e/f", &st) != 0) { perror("stat"); return 1; }
	printf("sum %lu size %ld\n", sum, (long)st.st_size);
	return 0;
}
