#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Forks with 150 MiB of touched heap — more than the guest could hold
   twice — and each side writes its own copy of a page. */
int main(void) {
	size_t n = 150 << 20;
	char *big = malloc(n);
	memset(big, 'p', n);
	pid_t c = fork();
	if (c < 0) {
		perror("fork");
		return 1;
	}
	if (c == 0) {
		big[4096] = 'c';
		_exit(big[4096] == 'c' && big[0] == 'p' ? 7 : 1);
	}
	int status;
	waitpid(c, &status, 0);
	big[8192] = 'q';
	printf("child %d parent sees %c %c %c\n", WEXITSTATUS(status), big[0], big[4096], big[8192]);
	return 0;
}
