/* Holds what a checkpoint cannot take in one piece: "pages N" fills N
   MiB of RAM with bytes zstd cannot compress (all new to the checkpoint
   file at once), "files N" writes N MiB of them to a file. Then it
   computes for a while, making exits where checkpoints are taken, and
   prints a checksum. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long long x = 88172645463325252ULL;

static unsigned long long next(void) {
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x;
}

int main(int argc, char **argv) {
	if (argc != 3) return 2;
	size_t n = (size_t)atoi(argv[2]) << 20;
	unsigned long long *buf = malloc(strcmp(argv[1], "pages") == 0 ? n : 1 << 20);
	if (!buf) { perror("malloc"); return 1; }
	if (strcmp(argv[1], "pages") == 0) {
		for (size_t i = 0; i < n / 8; i++) buf[i] = next();
	} else {
		int fd = open("/tmp/big", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		for (size_t done = 0; done < n; done += 1 << 20) {
			for (size_t i = 0; i < (1 << 20) / 8; i++) buf[i] = next();
			if (write(fd, buf, 1 << 20) != 1 << 20) { perror("write"); return 1; }
		}
		close(fd);
	}
	unsigned long long sum = 0;
	for (int round = 0; round < 200; round++) {
		for (unsigned long i = 0; i < 2000000UL; i++) sum += next() >> 60;
		getppid(); /* an exit: where a checkpoint is taken */
	}
	printf("sum %llu\n", sum);
	return 0;
}
