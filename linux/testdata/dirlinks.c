/* A directory's link count, as Linux's file systems keep it: 2 and one
   per subdirectory — of a host directory before and after it is read, of
   directories the program makes, removes and moves. The output is the
   same natively and under reprise. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void links(const char *what, const char *p) {
	struct stat st;
	if (stat(p, &st) != 0) {
		printf("%s: stat failed\n", what);
		return;
	}
	printf("%s: %lu\n", what, (unsigned long)st.st_nlink);
}

int main(void) {
	links("/usr", "/usr");
	DIR *d = opendir("/usr");
	while (d && readdir(d))
		;
	if (d)
		closedir(d);
	links("/usr, read", "/usr");
	char base[] = "/tmp/dirlinksXXXXXX";
	if (!mkdtemp(base) || chdir(base) != 0)
		return 1;
	mkdir("d", 0755);
	links("new", "d");
	mkdir("d/e", 0755);
	mkdir("d/f", 0755);
	links("two subdirectories", "d");
	rmdir("d/e");
	links("one removed", "d");
	rename("d/f", "g");
	links("one moved out", "d");
	links("the cwd", ".");
	return 0;
}
