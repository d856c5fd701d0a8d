/* F_SETLKW's deadlock detection, as Linux's: the parent holds byte 0,
   the child byte 1 and waits for byte 0; the parent asking for byte 1
   would close the cycle and gets EDEADLK; it lets byte 0 go and the child
   gets it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "result.h"

static int lock(int fd, int cmd, short type, off_t start) {
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = 1};
	return fcntl(fd, cmd, &fl);
}

int main(void) {
	const char *path = "/tmp/reprise-deadlk";
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	unlink(path);
	write(fd, "ab", 2);
	int ready[2];
	pipe(ready);
	result("parent locks byte 0", lock(fd, F_SETLK, F_WRLCK, 0));
	pid_t child = fork();
	if (child == 0) {
		result("child locks byte 1", lock(fd, F_SETLK, F_WRLCK, 1));
		write(ready[1], "x", 1);
		_exit(lock(fd, F_SETLKW, F_WRLCK, 0) == 0 ? 0 : 1); /* got byte 0 */
	}
	char c;
	read(ready[0], &c, 1);
	struct timespec pause = {0, 100 * 1000 * 1000};
	nanosleep(&pause, NULL); /* the child is waiting by now */
	result("parent waits for byte 1", lock(fd, F_SETLKW, F_WRLCK, 1));
	result("parent lets byte 0 go", lock(fd, F_SETLK, F_UNLCK, 0));
	int status;
	waitpid(child, &status, 0);
	printf("the child got byte 0: %d\n", WEXITSTATUS(status) == 0);
	return 0;
}
