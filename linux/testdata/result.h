/* result prints a call's result, and its error if it failed: the line
   the tests of testdata/ compare with the host's. */
#ifndef RESULT_H
#define RESULT_H
#include <errno.h>
#include <stdio.h>
#include <string.h>

static inline void result(const char *what, long r) {
	if (r < 0)
		printf("%s: %ld %s\n", what, r, strerror(errno));
	else
		printf("%s: %ld\n", what, r);
	fflush(stdout);
}
#endif
