/* renameat2's flags and statfs, as Linux answers them: NOREPLACE onto an
   existing and a missing target, EXCHANGE of two files and of a file and
   a directory, the flag errors, and the statfs fields every file system
   of the host's kind agrees on. The output is the same natively and under
   reprise. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "result.h"

static long rename2(const char *a, const char *b, unsigned flags) {
	return syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, flags);
}

static void file(const char *name, const char *text) {
	int f = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (write(f, text, strlen(text)) < 0)
		exit(1);
	close(f);
}

static void show(const char *name) {
	char buf[32] = {0};
	int f = open(name, O_RDONLY);
	if (f < 0) {
		printf("%s: %s\n", name, strerror(errno));
		return;
	}
	ssize_t n = read(f, buf, sizeof buf - 1);
	close(f);
	printf("%s: %.*s\n", name, (int)(n > 0 ? n : 0), buf);
}

int main(void) {
	char base[] = "/tmp/renametestXXXXXX";
	if (!mkdtemp(base) || chdir(base) != 0)
		return 1;
	file("a", "A");
	file("b", "B");
	result("noreplace onto b", rename2("a", "b", RENAME_NOREPLACE));
	result("noreplace from nothing", rename2("nothing", "b", RENAME_NOREPLACE));
	result("noreplace onto c", rename2("a", "c", RENAME_NOREPLACE));
	show("a");
	show("c");
	result("exchange c and b", rename2("c", "b", RENAME_EXCHANGE));
	show("b");
	show("c");
	result("exchange with nothing", rename2("c", "nothing", RENAME_EXCHANGE));
	mkdir("d", 0755);
	file("d/inside", "I");
	result("exchange file and directory", rename2("c", "d", RENAME_EXCHANGE));
	show("c/inside");
	show("d");
	result("exchange into itself", rename2("c", "c/inside", RENAME_EXCHANGE));
	result("exchange and noreplace", rename2("b", "d", RENAME_EXCHANGE | RENAME_NOREPLACE));
	result("unknown flag", rename2("b", "d", 1 << 5));

	struct statfs fs;
	result("statfs", statfs(".", &fs));
	printf("bsize %ld namelen %ld frsize %ld\n", (long)fs.f_bsize, (long)fs.f_namelen, (long)fs.f_frsize);
	result("statfs nothing", statfs("nothing", &fs));
	int f = open("b", O_RDONLY);
	result("fstatfs", fstatfs(f, &fs));
	close(f);
	result("fstatfs bad fd", fstatfs(99, &fs));

	unlink("b");
	unlink("d");
	unlink("c/inside");
	rmdir("c");
	chdir("/");
	result("rmdir base", rmdir(base));
	return 0;
}
