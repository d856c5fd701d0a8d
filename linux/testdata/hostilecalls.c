#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* Hands the kernel offsets, counts and paths at their limits and prints
   what each call returns. Run natively in a tmpfs directory it prints
   what Linux does; under reprise (whose files are in memory, as tmpfs's)
   it must print the same. Paths are relative: the working directory is
   the test's directory natively, / under reprise. The calls go through
   syscall() so that no C library checks or changes the arguments first. */

static char buf[64];

static void show(const char *what, long ret) {
	if (ret < 0)
		printf("%s: -1 %s\n", what, strerror(errno));
	else
		printf("%s: %ld\n", what, ret);
	errno = 0;
}

static long size_of(int fd) {
	struct stat st;
	return fstat(fd, &st) == 0 ? (long)st.st_size : -1;
}

static void offsets(void) {
	int fd = open("hc.dat", O_RDWR | O_CREAT | O_TRUNC, 0644);
	show("write hello", write(fd, "hello", 5));
	show("pwrite 16 at max-8", syscall(SYS_pwrite64, fd, buf, 16, INT64_MAX - 8));
	show("pwrite 1 at max", syscall(SYS_pwrite64, fd, buf, 1, INT64_MAX));
	show("pwrite 0 at max", syscall(SYS_pwrite64, fd, buf, 0, INT64_MAX));
	show("pwrite at -1", syscall(SYS_pwrite64, fd, buf, 1, -1L));
	show("pwrite at min", syscall(SYS_pwrite64, fd, buf, 1, INT64_MIN));
	show("pread 16 at max-8", syscall(SYS_pread64, fd, buf, 16, INT64_MAX - 8));
	show("pread at -1", syscall(SYS_pread64, fd, buf, 1, -1L));
	show("pread bad fd at -1", syscall(SYS_pread64, 999, buf, 1, -1L));
	show("pread past the end", syscall(SYS_pread64, fd, buf, 4, 1L << 40));
	show("pread size max", syscall(SYS_pread64, fd, buf, SIZE_MAX, 0));
	show("read 2^63", syscall(SYS_read, fd, buf, 1UL << 63));
	show("size", size_of(fd));

	show("lseek max-8", syscall(SYS_lseek, fd, INT64_MAX - 8, SEEK_SET));
	show("write 16 there", syscall(SYS_write, fd, buf, 16));
	show("read 16 there", syscall(SYS_read, fd, buf, 16));
	show("write 0 there", syscall(SYS_write, fd, buf, 0));
	show("lseek cur +max", syscall(SYS_lseek, fd, INT64_MAX, SEEK_CUR));
	show("lseek cur 0", syscall(SYS_lseek, fd, 0, SEEK_CUR));
	show("lseek end +max", syscall(SYS_lseek, fd, INT64_MAX, SEEK_END));
	show("lseek -1", syscall(SYS_lseek, fd, -1L, SEEK_SET));
	show("lseek whence 7", syscall(SYS_lseek, fd, 0, 7));
	show("lseek data 0", syscall(SYS_lseek, fd, 0, SEEK_DATA));
	show("lseek data 5", syscall(SYS_lseek, fd, 5, SEEK_DATA));
	show("lseek data -1", syscall(SYS_lseek, fd, -1L, SEEK_DATA));
	show("lseek hole 2", syscall(SYS_lseek, fd, 2, SEEK_HOLE));
	show("lseek 100", syscall(SYS_lseek, fd, 100, SEEK_SET));
	show("write 0 at 100", syscall(SYS_write, fd, buf, 0));
	show("size after", size_of(fd));

	show("ftruncate -1", syscall(SYS_ftruncate, fd, -1L));
	show("ftruncate bad fd -1", syscall(SYS_ftruncate, 999, -1L));
	show("ftruncate 3", syscall(SYS_ftruncate, fd, 3));
	show("size truncated", size_of(fd));
	show("ftruncate 5", syscall(SYS_ftruncate, fd, 5));
	show("pwrite llo", syscall(SYS_pwrite64, fd, "llo", 3, 2));
	show("mmap offset max", (long)syscall(SYS_mmap, 0, 8192, PROT_READ, MAP_PRIVATE, fd, INT64_MAX & ~4095L));
	show("mmap offset 2^64-4096", (long)syscall(SYS_mmap, 0, 8192, PROT_READ, MAP_PRIVATE, fd, -4096L));
	close(fd);

	int app = open("hc.app", O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644);
	show("append abc", write(app, "abc", 3));
	show("pwrite appends", syscall(SYS_pwrite64, app, "Z", 1, 0));
	memset(buf, 0, sizeof buf);
	show("pread back", syscall(SYS_pread64, app, buf, sizeof buf, 0));
	printf("appended: %s\n", buf);
	close(app);
}

static void send(void) {
	int in = open("hc.dat", O_RDONLY);
	int out = open("hc.out", O_RDWR | O_CREAT | O_TRUNC, 0644);
	off_t off = INT64_MAX - 2;
	show("sendfile from max-2", syscall(SYS_sendfile, out, in, &off, 5));
	printf("offset left at max-2: %d\n", off == INT64_MAX - 2);
	off = -1;
	show("sendfile from -1", syscall(SYS_sendfile, out, in, &off, 5));
	show("sendfile count max", syscall(SYS_sendfile, out, in, NULL, SIZE_MAX));
	show("sendfile bad offset pointer", syscall(SYS_sendfile, out, in, (void *)8, 5));
	show("lseek out max-2", syscall(SYS_lseek, out, INT64_MAX - 2, SEEK_SET));
	off = 0;
	show("sendfile to max-2", syscall(SYS_sendfile, out, in, &off, 5));
	printf("offset left at 0: %d\n", off == 0);
	show("lseek out max-2^40", syscall(SYS_lseek, out, INT64_MAX - (1L << 40), SEEK_SET));
	off = 5;
	show("sendfile 2^62 there, clamped", syscall(SYS_sendfile, out, in, &off, 1UL << 62));
	show("lseek out 0", syscall(SYS_lseek, out, 0, SEEK_SET));
	off = 1;
	show("sendfile 3 from 1", syscall(SYS_sendfile, out, in, &off, 3));
	printf("offset now %ld\n", (long)off);
	memset(buf, 0, sizeof buf);
	show("pread out", syscall(SYS_pread64, out, buf, sizeof buf, 0));
	printf("sent: %s\n", buf);
	int app = open("hc.app", O_WRONLY | O_APPEND);
	show("sendfile to append", syscall(SYS_sendfile, app, in, NULL, 1));
	int p[2];
	pipe(p);
	write(p[1], "x", 1);
	off = 0;
	show("sendfile from pipe at offset", syscall(SYS_sendfile, out, p[0], &off, 1));
	close(p[0]);
	close(p[1]);
	close(app);
	close(in);
	close(out);
}

static void vectors(void) {
	int fd = open("hc.dat", O_RDWR);
	struct iovec iov[2] = {{buf, 8}, {buf + 8, 8}};
	show("readv 0", syscall(SYS_readv, fd, iov, 0));
	show("readv 1025", syscall(SYS_readv, fd, iov, 1025));
	show("readv bad vector", syscall(SYS_readv, fd, (void *)8, 2));
	struct iovec neg[2] = {{buf, 8}, {buf, (size_t)-1}};
	show("writev negative length", syscall(SYS_writev, fd, neg, 2));
	struct iovec huge[2] = {{buf, 1UL << 62}, {buf, 1UL << 62}};
	show("writev huge", syscall(SYS_writev, fd, huge, 2));
	struct iovec one = {buf, 1UL << 40};
	show("readv one huge", syscall(SYS_readv, fd, &one, 1));
	show("lseek max-4", syscall(SYS_lseek, fd, INT64_MAX - 4, SEEK_SET));
	show("readv past max", syscall(SYS_readv, fd, iov, 2));
	show("writev past max", syscall(SYS_writev, fd, iov, 2));
	show("lseek 0", syscall(SYS_lseek, fd, 0, SEEK_SET));
	show("readv", syscall(SYS_readv, fd, iov, 2));
	close(fd);
}

static void paths(void) {
	show("open empty", syscall(SYS_open, "", O_RDONLY));
	show("open passwd/", syscall(SYS_open, "/etc/passwd/", O_RDONLY));
	show("open passwd/.", syscall(SYS_open, "/etc/passwd/.", O_RDONLY));
	show("open passwd/..", syscall(SYS_open, "/etc/passwd/..", O_RDONLY));
	show("open passwd/../passwd", syscall(SYS_open, "/etc/passwd/../passwd", O_RDONLY));
	show("access passwd/..", syscall(SYS_access, "/etc/passwd/..", F_OK));
	struct stat st;
	show("stat passwd/", syscall(SYS_stat, "/etc/passwd/", &st));
	show("stat empty", syscall(SYS_stat, "", &st));
	int fd = syscall(SYS_open, "/etc/./passwd", O_RDONLY);
	printf("open /etc/./passwd: %s\n", fd >= 0 ? "ok" : strerror(errno));
	close(fd);
	fd = syscall(SYS_open, "/../etc//passwd", O_RDONLY);
	printf("open /../etc//passwd: %s\n", fd >= 0 ? "ok" : strerror(errno));
	close(fd);
	show("openat empty", syscall(SYS_openat, AT_FDCWD, "", O_RDONLY));
	show("creat with slash", syscall(SYS_open, "hc.new/", O_WRONLY | O_CREAT, 0644));
	show("creat dir", syscall(SYS_open, ".", O_RDONLY | O_CREAT, 0644));
	show("mkdir with slash", syscall(SYS_mkdir, "hc.d/", 0755));
	show("mkdir .", syscall(SYS_mkdir, ".", 0755));
	show("mkdir /", syscall(SYS_mkdir, "/", 0755));
	show("mkdir in a file", syscall(SYS_mkdir, "hc.dat/x", 0755));
	show("rename file/", syscall(SYS_rename, "hc.dat/", "hc.x"));
	show("rename to file/", syscall(SYS_rename, "hc.dat", "hc.x/"));
	show("rename .", syscall(SYS_rename, ".", "hc.x"));
	show("unlink file/", syscall(SYS_unlink, "hc.dat/"));
	show("unlink .", syscall(SYS_unlink, "."));
	show("rmdir .", syscall(SYS_rmdir, "."));
	show("rmdir ..", syscall(SYS_rmdir, ".."));
	show("rmdir /", syscall(SYS_rmdir, "/"));
	show("rmdir with slash", syscall(SYS_rmdir, "hc.d/"));
	show("readlink size 0", syscall(SYS_readlink, "/proc/self/exe", buf, 0));
	show("readlink size -1", syscall(SYS_readlink, "/proc/self/exe", buf, -1L));
	show("chdir empty", syscall(SYS_chdir, ""));
	show("chdir file", syscall(SYS_chdir, "/etc/passwd"));
	char name[300];
	memset(name, 'a', sizeof name - 1);
	name[sizeof name - 1] = 0;
	show("open long name", syscall(SYS_open, name, O_RDONLY));
	show("creat long name", syscall(SYS_open, name, O_WRONLY | O_CREAT, 0644));
}

static void pipes(void) {
	int p[2];
	pipe(p);
	show("pread pipe", syscall(SYS_pread64, p[0], buf, 1, 0));
	show("pwrite pipe", syscall(SYS_pwrite64, p[1], "x", 1, 0));
	show("lseek pipe", syscall(SYS_lseek, p[0], 0, SEEK_CUR));
	show("read 0 from empty pipe", syscall(SYS_read, p[0], buf, 0));
	close(p[0]);
	show("write 0 to a pipe without readers", syscall(SYS_write, p[1], buf, 0));
	close(p[1]);

	int dir = open(".", O_RDONLY | O_DIRECTORY);
	show("pread dir", syscall(SYS_pread64, dir, buf, 1, 0));
	show("lseek dir end", syscall(SYS_lseek, dir, 0, SEEK_END));
	show("lseek dir -1", syscall(SYS_lseek, dir, -1L, SEEK_SET));
	close(dir);
	int null = open("/dev/null", O_RDWR);
	show("lseek null", syscall(SYS_lseek, null, 100, SEEK_SET));
	show("pread null", syscall(SYS_pread64, null, buf, 1, 1L << 40));
	close(null);
}

static void on_alarm(int sig) { (void)sig; }

static void timers(void) {
	show("alarm 2^40 (alarm 0)", syscall(SYS_alarm, 1UL << 40));
	show("alarm 0", syscall(SYS_alarm, 0));
	int p[2];
	pipe(p);
	write(p[1], "x", 1);
	struct pollfd pfd = {p[0], POLLIN, 0};
	struct timespec forever = {INT64_MAX, 999999999};
	show("ppoll ready, for ever", syscall(SYS_ppoll, &pfd, 1, &forever, NULL, 8));
	fd_set set;
	FD_ZERO(&set);
	FD_SET(p[0], &set);
	struct timeval tv = {INT64_MAX, 999999};
	show("select ready, for ever", syscall(SYS_select, p[0] + 1, &set, NULL, NULL, &tv));
	close(p[0]);
	close(p[1]);
	struct sigaction sa = {0};
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	alarm(1);
	struct timespec long_sleep = {1L << 33, 0};
	show("sleep 2^33 s, woken by the alarm", syscall(SYS_clock_nanosleep, CLOCK_REALTIME, 0, &long_sleep, NULL));
}

int main(void) {
	offsets();
	send();
	vectors();
	paths();
	pipes();
	timers();
	unlink("hc.dat");
	unlink("hc.out");
	unlink("hc.app");
	return 0;
}
