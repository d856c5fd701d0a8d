/* Hard links as Linux keeps them: link and linkat, st_nlink counting the
   names, one inode under both, a write through one name seen through the
   other, unlink of one leaving the other, a rename onto another link of
   the same file leaving both, and the errors. The output is the same
   natively and under reprise. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "result.h"

static void links(const char *name) {
	struct stat st;
	if (stat(name, &st) != 0)
		printf("%s: %s\n", name, strerror(errno));
	else
		printf("%s: nlink %lu size %ld\n", name, (unsigned long)st.st_nlink, (long)st.st_size);
}

int main(void) {
	char base[] = "/tmp/linktestXXXXXX";
	if (!mkdtemp(base) || chdir(base) != 0)
		return 1;
	int f = open("a", O_CREAT | O_WRONLY, 0644);
	result("write", write(f, "one", 3));
	close(f);
	result("link a b", link("a", "b"));
	mkdir("d", 0755);
	result("linkat a d/c", linkat(AT_FDCWD, "a", AT_FDCWD, "d/c", 0));
	links("a");
	struct stat sa, sb;
	stat("a", &sa);
	stat("d/c", &sb);
	printf("same inode: %d\n", sa.st_ino == sb.st_ino);
	f = open("b", O_WRONLY | O_APPEND);
	result("append through b", write(f, "two", 3));
	close(f);
	links("d/c");
	result("unlink a", unlink("a"));
	links("b");
	result("rename b onto d/c", rename("b", "d/c"));
	links("b");
	links("d/c");
	result("link onto an existing name", link("b", "d/c"));
	result("link a directory", link("d", "e"));
	result("link nothing", link("nothing", "e"));
	result("linkat bad flag", linkat(AT_FDCWD, "b", AT_FDCWD, "e", 0x2));
	result("unlink b", unlink("b"));
	links("d/c");
	unlink("d/c");
	rmdir("d");
	chdir("/");
	result("rmdir base", rmdir(base));
	return 0;
}
