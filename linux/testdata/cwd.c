/* The working directory as programs use it: chdir and fchdir, relative
   paths, getcwd following a rename, a removed working directory, and the
   errors. Paths are printed relative to a fresh directory under /tmp, so
   the output is the same natively and under reprise. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "result.h"

static char base[64];

static void cwd(const char *what) {
	char buf[256];
	if (!getcwd(buf, sizeof buf)) {
		printf("%s: getcwd %s\n", what, strerror(errno));
		return;
	}
	size_t n = strlen(base);
	printf("%s: %s\n", what, strncmp(buf, base, n) == 0 ? (buf[n] ? buf + n : "(base)") : buf);
}

int main(void) {
	strcpy(base, "/tmp/cwdtestXXXXXX");
	if (!mkdtemp(base))
		return 1;
	result("chdir base", chdir(base));
	cwd("cwd");
	result("mkdir a", mkdir("a", 0755));
	result("mkdir a/b", mkdir("a/b", 0755));
	result("chdir a/b", chdir("a/b"));
	cwd("cwd");
	int f = open("f", O_CREAT | O_WRONLY, 0644);
	result("create f", f < 0 ? -1 : 0);
	close(f);
	result("chdir ..", chdir(".."));
	cwd("cwd");
	struct stat st;
	result("stat b/f", stat("b/f", &st));
	int d = open("b", O_RDONLY | O_DIRECTORY);
	result("fchdir b", fchdir(d));
	cwd("cwd");
	result("openat . f", openat(AT_FDCWD, "f", O_RDONLY) < 0 ? -1 : 0);
	char path[128];
	snprintf(path, sizeof path, "%s/a", base);
	char to[128];
	snprintf(to, sizeof to, "%s/c", base);
	result("rename a to c", rename(path, to));
	cwd("cwd after rename");
	result("chdir to a file", chdir("f"));
	result("chdir to nothing", chdir("nothing"));
	int file = open("f", O_RDONLY);
	result("fchdir to a file", fchdir(file));
	close(file);
	char small[4];
	errno = 0;
	char *got = getcwd(small, sizeof small);
	printf("getcwd small: %s %s\n", got ? "ok" : "null", strerror(errno));
	result("unlink f", unlink("f"));
	snprintf(path, sizeof path, "%s/c/b", base);
	result("rmdir the cwd", rmdir(path));
	cwd("cwd removed");
	result("create in a removed cwd", open("g", O_CREAT | O_WRONLY, 0644));
	result("chdir back", chdir(base));
	cwd("cwd");
	result("rmdir c", rmdir("c"));
	result("chdir /", chdir("/"));
	result("rmdir base", rmdir(base));
	return 0;
}
