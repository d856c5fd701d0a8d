/* A store that faults and is retried: after fork, the parent's first
   write to the page holding value, which it shares with its child, is a
   copy-on-write fault the kernel serves before the store runs again — a
   stretch between two exits that begins in the middle of a line, which
   reverse-stepi steps back across. ballast, 9 MiB of writable pages
   mapped at exec, makes the fork share its pages copy-on-write: reprise
   copies a smaller process's writable pages at the fork instead, and
   the store would not fault. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

long value = 1;
char ballast[9 << 20];

int main(void) {
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	value = 42; /* the store that faults */
	waitpid(child, NULL, 0);
	printf("value %ld\n", value);
	return 0;
}
