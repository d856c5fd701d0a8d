/* A file's times as Linux keeps them: utimensat, futimens, utimes and
   utime set them (UTIME_OMIT leaves one, UTIME_NOW and a null pointer
   take now), a write, a truncation and O_TRUNC stamp the file, and a
   directory is stamped when its entries change (create, unlink, rename,
   mkdir, link, symlink). Times set here are printed; times taken from the
   clock only as "changed", which is the same natively and under
   reprise. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <utime.h>

#include "result.h"

static const struct timespec old = {1577836800, 123456789}; /* 2020-01-01 */

static void age(const char *name) {
	struct timespec ts[2] = {old, old};
	result("  age", utimensat(AT_FDCWD, name, ts, AT_SYMLINK_NOFOLLOW));
}

static void show(const char *what, const char *name) {
	struct stat st;
	if (lstat(name, &st) != 0) {
		result(what, -1);
		return;
	}
	printf("%s: atime %lld.%09ld mtime %lld.%09ld\n", what, (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
	       (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

/* changed says whether what was done to name stamped it anew. */
static void changed(const char *what, const char *name) {
	struct stat st;
	if (lstat(name, &st) != 0) {
		result(what, -1);
		return;
	}
	printf("%s: mtime changed %d, ctime after 2020 %d\n", what, st.st_mtim.tv_sec != old.tv_sec,
	       st.st_ctim.tv_sec > old.tv_sec);
}

int main(void) {
	char base[] = "/tmp/filetimesXXXXXX";
	if (!mkdtemp(base) || chdir(base) != 0)
		return 1;
	int fd = open("f", O_CREAT | O_RDWR, 0644);
	result("write", write(fd, "hello", 5));

	struct timespec both[2] = {{1600000000, 5}, {1700000000, 999999999}};
	result("utimensat", utimensat(AT_FDCWD, "f", both, 0));
	show("set", "f");
	struct timespec omit[2] = {{0, UTIME_OMIT}, {1650000000, 0}};
	result("utimensat omit atime", utimensat(AT_FDCWD, "f", omit, 0));
	show("omitted", "f");
	struct timespec bad[2] = {{0, 1000000000}, {0, 0}};
	result("utimensat bad nsec", utimensat(AT_FDCWD, "f", bad, 0));
	result("utimensat missing", utimensat(AT_FDCWD, "nothing", NULL, 0));
	result("utimensat flags", utimensat(AT_FDCWD, "f", NULL, 0x4000));
	struct timespec fut[2] = {{1500000000, 1}, {0, UTIME_OMIT}};
	result("futimens", futimens(fd, fut));
	show("futimens", "f");
	struct timeval tv[2] = {{1400000000, 250000}, {1400000001, 750000}};
	result("utimes", utimes("f", tv));
	show("utimes", "f");
	struct utimbuf ub = {1300000000, 1300000002};
	result("utime", utime("f", &ub));
	show("utime", "f");
	result("utimensat now", utimensat(AT_FDCWD, "f", NULL, 0));
	changed("now", "f");

	age("f");
	result("write", write(fd, "!", 1));
	changed("written", "f");
	age("f");
	result("ftruncate", ftruncate(fd, 2));
	changed("truncated", "f");
	age("f");
	close(open("f", O_WRONLY | O_TRUNC));
	changed("O_TRUNC", "f");
	age("f");
	close(open("f", O_RDONLY));
	show("read-only open", "f");

	result("mkdir", mkdir("d", 0755));
	age("d");
	close(open("d/g", O_CREAT | O_WRONLY, 0644));
	changed("created in", "d");
	age("d");
	result("rename", rename("d/g", "d/h"));
	changed("renamed in", "d");
	age("d");
	result("link", link("d/h", "d/i"));
	changed("linked in", "d");
	age("d");
	result("symlink", symlink("h", "d/s"));
	changed("symlinked in", "d");
	age("d/s");
	show("symlink itself", "d/s");
	age("d");
	result("unlink", unlink("d/i"));
	changed("unlinked in", "d");
	age("d");
	result("mkdir", mkdir("d/e", 0755));
	changed("mkdir in", "d");
	age("d");
	result("rmdir", rmdir("d/e"));
	changed("rmdir in", "d");
	return 0;
}
