/* A store that faults and is retried: after fork, the parent's first
   write to the page holding value, which it shares with its child, is a
   copy-on-write fault the kernel serves before the store runs again — a
   stretch between two exits that begins in the middle of a line, which
   reverse-stepi steps back across. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

long value = 1;

int main(void) {
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	value = 42; /* the store that faults */
	waitpid(child, NULL, 0);
	printf("value %ld\n", value);
	return 0;
}
