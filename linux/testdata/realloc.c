#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Grows a large block (mremap under glibc and musl), keeping its bytes. */
int main(void) {
	size_t n = 1 << 20;
	unsigned char *p = malloc(n);
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 7);
	for (int round = 0; round < 6; round++) {
		n *= 2;
		p = realloc(p, n);
		if (!p)
			return 1;
		memset(p + n / 2, round, n / 2);
	}
	unsigned long sum = 0;
	for (size_t i = 0; i < (1 << 20); i++)
		sum += p[i];
	printf("size %zu sum %lu\n", n, sum);
	free(p);
	return 0;
}
