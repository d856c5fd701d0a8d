/* An unprivileged user's rights to files, as Linux's permission checks
   answer them: the owner's, the group's or the others' bits, whichever
   class the user is in; write and search on a directory to create,
   remove or rename in it; only the owner changes a file's mode or sets
   its times (a writer may set them to now); a directory must be
   searchable to enter. The host's files are root's: the user cannot
   write, chmod or remove them. Run as uid 1000, natively and under
   reprise, the output is the same. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "result.h"

static long opened(const char *name, int flags) {
	int fd = open(name, flags);
	if (fd >= 0)
		close(fd);
	return fd < 0 ? -1 : 0;
}

int main(void) {
	char dir[] = "/tmp/permsXXXXXX";
	if (!mkdtemp(dir) || chdir(dir) != 0)
		return 1;
	umask(022);
	close(open("ro", O_CREAT | O_WRONLY, 0444));
	result("open ro for writing", opened("ro", O_WRONLY));
	result("open ro for reading", opened("ro", O_RDONLY));
	result("open ro with O_TRUNC", opened("ro", O_RDONLY | O_TRUNC));
	result("access W_OK", access("ro", W_OK));
	result("access R_OK", access("ro", R_OK));
	result("access X_OK", access("ro", X_OK));
	result("access bad mode", access("ro", 8));
	result("chmod own file", chmod("ro", 0644));
	result("open it for writing", opened("ro", O_WRONLY));
	close(open("grp", O_CREAT | O_WRONLY, 0070));
	result("group bits, owner's none", opened("grp", O_RDONLY));

	result("mkdir locked", mkdir("locked", 0555));
	result("create in it", opened("locked/x", O_CREAT | O_WRONLY));
	result("mkdir in it", mkdir("locked/y", 0755));
	result("symlink in it", symlink("x", "locked/s"));
	result("chmod it open", chmod("locked", 0755));
	result("create in it", opened("locked/x", O_CREAT | O_WRONLY));
	result("chmod it shut", chmod("locked", 0555));
	result("unlink in it", unlink("locked/x"));
	result("rename out of it", rename("locked/x", "x"));
	result("rename into it", rename("ro", "locked/ro"));
	result("link into it", link("ro", "locked/ro"));
	result("unlink missing in it", unlink("locked/none"));
	result("mkdir existing in it", mkdir("locked/x", 0755));
	result("chmod it open", chmod("locked", 0755));
	result("unlink in it", unlink("locked/x"));

	result("mkdir closed", mkdir("closed", 0));
	result("chdir into it", chdir("closed"));
	result("open it", opened("closed", O_RDONLY | O_DIRECTORY));
	result("rmdir it", rmdir("closed"));

	result("write /etc/passwd", opened("/etc/passwd", O_WRONLY));
	result("read /etc/passwd", opened("/etc/passwd", O_RDONLY));
	result("chmod /etc/passwd", chmod("/etc/passwd", 0666));
	struct timespec ts[2] = {{1, 0}, {1, 0}};
	result("set times of /etc/passwd", utimensat(AT_FDCWD, "/etc/passwd", ts, 0));
	result("touch /etc/passwd", utimensat(AT_FDCWD, "/etc/passwd", NULL, 0));
	result("unlink /etc/passwd", unlink("/etc/passwd"));
	/* Within /etc: into the program's directory, a host whose /tmp is
	   another file system says EXDEV before it looks at permissions. */
	result("rename /etc/passwd", rename("/etc/passwd", "/etc/passwd.moved"));
	result("mkdir /etc/new", mkdir("/etc/new", 0755));
	result("create /new", opened("/new", O_CREAT | O_WRONLY));
	result("touch own file", utimensat(AT_FDCWD, "ro", NULL, 0));
	return 0;
}
