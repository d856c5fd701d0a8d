#include <stdio.h>
#include <stdlib.h>

/* Prints, then aborts: SIGABRT ends the run with a report naming it. */
int main(void) {
	puts("about to abort");
	fflush(stdout);
	abort();
}
