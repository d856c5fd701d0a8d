/* A program that writes, then runs another executable (argv[1], with
   the rest of its arguments): for going back across the exec in gdb. */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
	printf("before the exec\n");
	fflush(stdout);
	if (argc > 1)
		execv(argv[1], argv + 1);
	return 1;
}
