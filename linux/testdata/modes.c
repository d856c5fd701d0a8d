/* Permission bits as programs set them: umask applied to new files and
   directories, chmod, fchmod, fchmodat, and their errors. The output is
   the same natively and under reprise. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "result.h"

static void mode(const char *what, const char *path) {
	struct stat st;
	if (stat(path, &st) != 0)
		printf("%s: stat %s\n", what, strerror(errno));
	else
		printf("%s: %04o\n", what, st.st_mode & 07777);
}

int main(void) {
	char base[] = "/tmp/modetestXXXXXX";
	if (!mkdtemp(base) || chdir(base) != 0)
		return 1;
	umask(027);
	printf("umask was: %04o\n", umask(027));
	int f = open("f", O_CREAT | O_WRONLY, 0666);
	close(f);
	mode("created 0666", "f");
	result("mkdir 0777", mkdir("d", 0777));
	mode("mkdir'd", "d");
	result("chmod 0600", chmod("f", 0600));
	mode("after chmod", "f");
	f = open("f", O_RDONLY);
	result("fchmod 0444", fchmod(f, 0444));
	mode("after fchmod", "f");
	result("fchmodat 0750", fchmodat(AT_FDCWD, "d", 0750, 0));
	mode("after fchmodat", "d");
	int d = open("d", O_RDONLY | O_DIRECTORY);
	int g = openat(d, "g", O_CREAT | O_WRONLY, 0777);
	close(g);
	mode("created 0777 in d", "d/g");
	result("chmod nothing", chmod("nothing", 0600));
	result("fchmod bad fd", fchmod(99, 0600));
	umask(0);
	g = open("h", O_CREAT | O_WRONLY, 0666);
	close(g);
	mode("created 0666 with umask 0", "h");
	unlink("f");
	unlink("h");
	unlink("d/g");
	rmdir("d");
	chdir("/");
	result("rmdir base", rmdir(base));
	return 0;
}
