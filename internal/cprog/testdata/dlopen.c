/* Opens zlib at run time — not one of the libraries the executable
   names — and calls into it: a probe on a function of a library loaded
   with dlopen must be placed when the loader maps it.

   Usage: dlopen N (calls zlibVersion and crc32 N times) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 3;
	void *z = dlopen("libz.so.1", RTLD_NOW);
	if (!z) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	const char *(*version)(void) = (const char *(*)(void))dlsym(z, "zlibVersion");
	unsigned long (*crc)(unsigned long, const unsigned char *, unsigned) =
		(unsigned long (*)(unsigned long, const unsigned char *, unsigned))dlsym(z, "crc32");
	unsigned long c = 0;
	for (int i = 0; i < n; i++) {
		c = crc(c, (const unsigned char *)"reprise", 7);
		version();
	}
	printf("zlib %s crc %lx\ntruth crc32 %d\n", version(), c, n);
	return 0;
}
