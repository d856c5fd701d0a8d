/* A few system calls for gdb's catch syscall: a pipe written and read
   back, then the counts printed. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
	int fds[2];
	char buf[8];
	if (pipe(fds) != 0)
		return 1;
	ssize_t w = write(fds[1], "ping", 4);
	ssize_t r = read(fds[0], buf, sizeof buf);
	printf("wrote %zd read %zd\n", w, r);
	return 0;
}
