/* Advisory locks as Linux keeps them: fcntl record locks between a parent
   and a child (a conflict, F_GETLK naming the holder, F_SETLKW waiting for
   the holder to unlock, the locks a close of any descriptor drops), OFD
   locks between two open files of one process, flock, and the errors.
   The output is the same natively and under reprise. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "result.h"

static int lk(int fd, int cmd, short type, off_t start, off_t len) {
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
	return fcntl(fd, cmd, &fl);
}

int main(void) {
	char path[] = "/tmp/locktestXXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, "0123456789", 10) != 10)
		return 1;
	pid_t parent = getpid();
	result("parent write-locks 0-4", lk(fd, F_SETLK, F_WRLCK, 0, 5));
	result("parent read-locks 5-", lk(fd, F_SETLK, F_RDLCK, 5, 0));
	int go[2], done[2];
	if (pipe(go) || pipe(done))
		return 1;
	pid_t child = fork();
	if (child == 0) {
		int cfd = open(path, O_RDWR);
		result("child write-locks 2-3", lk(cfd, F_SETLK, F_WRLCK, 2, 2));
		result("child read-locks 6-8", lk(cfd, F_SETLK, F_RDLCK, 6, 3));
		result("child write-locks 6-8", lk(cfd, F_SETLK, F_WRLCK, 6, 3));
		struct flock q = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 3, .l_len = 1};
		result("child F_GETLK 3", fcntl(cfd, F_GETLK, &q));
		printf("holder: type write %d start %ld len %ld parent %d\n", q.l_type == F_WRLCK, (long)q.l_start, (long)q.l_len, q.l_pid == parent);
		q = (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 200, .l_len = 1};
		result("child F_GETLK 200", fcntl(cfd, F_GETLK, &q));
		printf("free: %d\n", q.l_type == F_UNLCK);
		if (write(go[1], "g", 1) != 1)
			_exit(1);
		result("child waits to write-lock 0-4", lk(cfd, F_SETLKW, F_WRLCK, 0, 5));
		result("child unlocks", lk(cfd, F_SETLK, F_UNLCK, 0, 0));
		_exit(0);
	}
	char c;
	if (read(go[0], &c, 1) != 1)
		return 1;
	usleep(20000);
	printf("parent unlocks 0-4\n");
	fflush(stdout);
	lk(fd, F_SETLK, F_UNLCK, 0, 5);
	waitpid(child, NULL, 0);

	int other = open(path, O_RDONLY);
	close(other); /* drops every lock of this process on the file */
	pid_t c2 = fork();
	if (c2 == 0) {
		int cfd = open(path, O_RDWR);
		result("after the parent closed another descriptor: child write-locks all", lk(cfd, F_SETLK, F_WRLCK, 0, 0));
		_exit(0);
	}
	waitpid(c2, NULL, 0);

	int a = open(path, O_RDWR), b = open(path, O_RDWR);
	result("OFD lock on a", lk(a, F_OFD_SETLK, F_WRLCK, 0, 10));
	result("OFD lock on b", lk(b, F_OFD_SETLK, F_WRLCK, 0, 10));
	result("OFD lock with a pid", ({
		struct flock fl = {.l_type = F_RDLCK, .l_pid = 1};
		fcntl(b, F_OFD_SETLK, &fl);
	}));
	close(a);
	result("OFD lock on b after a closed", lk(b, F_OFD_SETLK, F_WRLCK, 0, 10));
	close(b);

	a = open(path, O_RDONLY);
	b = open(path, O_RDONLY);
	result("flock a shared", flock(a, LOCK_SH));
	result("flock b shared", flock(b, LOCK_SH | LOCK_NB));
	result("flock b exclusive", flock(b, LOCK_EX | LOCK_NB));
	result("flock a unlock", flock(a, LOCK_UN));
	result("flock b exclusive again", flock(b, LOCK_EX | LOCK_NB));
	result("flock bad op", flock(b, 0));

	int ro = open(path, O_RDONLY);
	result("write lock on a read-only descriptor", lk(ro, F_SETLK, F_WRLCK, 0, 1));
	result("bad type", lk(fd, F_SETLK, 99, 0, 1));
	result("before the start", lk(fd, F_SETLK, F_RDLCK, -5, 1));
	unlink(path);
	return 0;
}
