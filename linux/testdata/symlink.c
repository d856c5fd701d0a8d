/* Symbolic links as Linux resolves them: symlink and symlinkat, readlink,
   lstat against stat, a dangling link, a link to a directory followed
   inside a path and by a trailing slash, relative targets with "..",
   loops (ELOOP), O_NOFOLLOW, links in a directory listing, and the
   host's own links (/bin on a merged /usr, the loader's). The output is
   the same natively and under reprise. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "result.h"

static char base[] = "/tmp/symlinktestXXXXXX";

static void show(const char *name) {
	char buf[256];
	ssize_t n = readlink(name, buf, sizeof buf - 1);
	if (n < 0) {
		printf("readlink %s: %s\n", name, strerror(errno));
	} else {
		buf[n] = 0;
		size_t b = strlen(base);
		if (strncmp(buf, base, b) == 0) /* the temporary directory's random name */
			printf("readlink %s: BASE%s\n", name, buf + b);
		else
			printf("readlink %s: %s\n", name, buf);
	}
	struct stat st;
	if (lstat(name, &st) != 0)
		printf("lstat %s: %s\n", name, strerror(errno));
	else
		printf("lstat %s: link %d dir %d size %ld\n", name, S_ISLNK(st.st_mode), S_ISDIR(st.st_mode),
		       S_ISLNK(st.st_mode) ? (long)st.st_size : 0L);
	if (stat(name, &st) != 0)
		printf("stat %s: %s\n", name, strerror(errno));
	else
		printf("stat %s: link %d dir %d\n", name, S_ISLNK(st.st_mode), S_ISDIR(st.st_mode));
}

int main(void) {
	if (!mkdtemp(base) || chdir(base) != 0)
		return 1;
	result("symlink dangling", symlink("target", "l"));
	show("l");
	int f = open("l", O_CREAT | O_WRONLY, 0644); /* creates the target */
	result("create through a dangling link", f >= 0 ? 0 : -1);
	result("write", write(f, "abc", 3));
	close(f);
	show("l");
	show("target");
	result("mkdir d", mkdir("d", 0755));
	result("symlinkat d ld", symlinkat("d", AT_FDCWD, "ld"));
	f = open("ld/inside", O_CREAT | O_WRONLY, 0644);
	result("open through a link to a directory", f >= 0 ? 0 : -1);
	close(f);
	show("ld");
	show("ld/");
	show("d/inside");
	result("symlink ../target d/up", symlink("../target", "d/up"));
	char buf[8] = {0};
	f = open("ld/up", O_RDONLY);
	result("read through two links", read(f, buf, 3));
	printf("read: %s\n", buf);
	close(f);
	result("symlink loop1", symlink("loop2", "loop1"));
	result("symlink loop2", symlink("loop1", "loop2"));
	result("open a loop", open("loop1", O_RDONLY));
	show("loop1");
	result("O_NOFOLLOW at a link", open("l", O_RDONLY | O_NOFOLLOW));
	result("readlink of a file", readlink("target", buf, sizeof buf));
	result("readlink of nothing", readlink("nothing", buf, sizeof buf));
	result("symlink over a name", symlink("x", "target"));
	result("symlink empty target", symlink("", "empty"));
	char abs[64];
	snprintf(abs, sizeof abs, "%s/target", base);
	result("symlink absolute", symlink(abs, "abs"));
	f = open("abs", O_RDONLY);
	result("read through an absolute link", read(f, buf, 3));
	close(f);
	DIR *dir = opendir(".");
	int links = 0, dirs = 0, regs = 0;
	for (struct dirent *e; (e = readdir(dir));) {
		links += e->d_type == DT_LNK;
		dirs += e->d_type == DT_DIR;
		regs += e->d_type == DT_REG;
	}
	closedir(dir);
	printf("listing: %d links, %d directories, %d files\n", links, dirs, regs);
	result("rename a link", rename("abs", "abs2"));
	show("abs2");
	result("unlink a link", unlink("l"));
	show("target");
	struct stat st;
	printf("/bin is a link: %d\n", lstat("/bin", &st) == 0 && S_ISLNK(st.st_mode));
	printf("/bin/sh resolves: %d\n", stat("/bin/sh", &st) == 0 && S_ISREG(st.st_mode));
	printf("/lib64 loader resolves: %d\n", stat("/lib64/ld-linux-x86-64.so.2", &st) == 0 && S_ISREG(st.st_mode));
	return 0;
}
