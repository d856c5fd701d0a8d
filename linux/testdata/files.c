#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads /data/input.txt (given by the host), writes and reads back a file
   in /tmp, lists /data, maps the input, and reads /dev/urandom. */
int main(void) {
	char buf[256];
	int fd = open("/data/input.txt", O_RDONLY);
	if (fd < 0) { perror("open input"); return 1; }
	struct stat st;
	fstat(fd, &st);
	ssize_t n = read(fd, buf, sizeof buf - 1);
	buf[n < 0 ? 0 : n] = 0;
	printf("input: %ld bytes, says: %s", (long)st.st_size, buf);
	char *map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	printf("mapped: %.5s\n", map == MAP_FAILED ? "FAIL" : map);
	close(fd);

	FILE *f = fopen("/tmp/out.txt", "w");
	fprintf(f, "written %d\n", 42);
	fclose(f);
	f = fopen("/tmp/out.txt", "r");
	fgets(buf, sizeof buf, f);
	fclose(f);
	printf("read back: %s", buf);

	DIR *d = opendir("/data");
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			printf("entry: %s\n", e->d_name);
	closedir(d);

	unsigned char r[16];
	fd = open("/dev/urandom", O_RDONLY);
	printf("urandom: %zd bytes\n", read(fd, r, sizeof r));
	close(fd);
	printf("missing: %d\n", access("/nonexistent", F_OK));
	unlink("/tmp/out.txt");
	printf("unlinked: %d\n", access("/tmp/out.txt", F_OK));
	return 0;
}
