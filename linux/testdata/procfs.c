/* What a program reads of itself and its machine in /proc, checked the
   way the C library and runtimes use it: /proc/self/maps places the
   program's code in its executable's r-xp mapping and a local in
   [stack] (pthread_getattr_np reads it for the main thread's stack);
   /proc/self/fd lists the open descriptors and its links name their
   files; /dev/fd/N of a pipe opens the pipe (bash's <(...)), and two
   pipes are two files to stat; /proc/cpuinfo lists as many processors as
   are online; /proc/meminfo's MemTotal is sysinfo's RAM; uptime and
   loadavg parse; a thread is named after the path it executes, or
   PR_SET_NAME's first 15 bytes (comm); /dev's memory
   devices have Linux's numbers, /dev/stdin is a link. Each line prints
   the same natively and under reprise. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "result.h"

static int in_mapping(uintptr_t addr, const char *perms, const char *name) {
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char p[8], path[400] = "";
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %399s", &lo, &hi, p, path) < 3)
			continue;
		if (addr >= lo && addr < hi && strcmp(p, perms) == 0 && strstr(path, name))
			found = 1;
	}
	if (f)
		fclose(f);
	return found;
}

int main(int argc, char **argv) {
	if (argc < 2) { /* run again with an argument, for cmdline */
		char *again[] = {argv[0], "second arg", NULL};
		execv("/proc/self/exe", again);
		return 1;
	}
	char exe[256] = {0};
	result("readlink exe", readlink("/proc/self/exe", exe, sizeof exe - 1) > 0);
	const char *base = strrchr(exe, '/') + 1;
	int local = 0;
	printf("main in r-xp of the executable: %d\n", in_mapping((uintptr_t)&main, "r-xp", base));
	printf("local in [stack]: %d\n", in_mapping((uintptr_t)&local, "rw-p", "[stack]"));
	pthread_attr_t at;
	void *stack;
	size_t size;
	result("pthread_getattr_np", pthread_getattr_np(pthread_self(), &at));
	pthread_attr_getstack(&at, &stack, &size);
	printf("main stack holds a local: %d\n", (uintptr_t)&local >= (uintptr_t)stack && (uintptr_t)&local < (uintptr_t)stack + size);

	char dir[] = "/tmp/procfsXXXXXX";
	if (!mkdtemp(dir) || chdir(dir) != 0)
		return 1;
	int f = open("file", O_CREAT | O_RDWR, 0644);
	char link[64], target[512] = {0};
	snprintf(link, sizeof link, "/proc/self/fd/%d", f);
	readlink(link, target, sizeof target - 1);
	printf("fd link names the file: %d\n", strcmp(target + strlen(target) - 5, "/file") == 0 && strncmp(target, dir, strlen(dir)) == 0);
	snprintf(link, sizeof link, "/proc/%d/fd/%d", getpid(), f);
	memset(target, 0, sizeof target);
	readlink(link, target, sizeof target - 1);
	printf("by pid too: %d\n", strstr(target, "/file") != NULL);
	DIR *d = opendir("/proc/self/fd");
	int entries = 0, has_file = 0, has_itself = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		entries++;
		has_file |= atoi(e->d_name) == f;
		has_itself |= atoi(e->d_name) == dirfd(d);
		if (e->d_type != DT_LNK)
			printf("%s is no link\n", e->d_name);
	}
	printf("fd entries: %d, the file's among them: %d, the directory's own: %d\n", entries >= 4, has_file, has_itself);
	struct stat ls;
	snprintf(link, sizeof link, "/proc/self/fd/%d", f);
	result("lstat of an fd entry", lstat(link, &ls));
	printf("  a link: %d, lrwx: %d\n", S_ISLNK(ls.st_mode), (ls.st_mode & 0777) == 0700);
	if (d)
		closedir(d);

	int p[2], q[2];
	if (pipe(p) || pipe(q) || write(p[1], "piped", 5) != 5)
		return 1;
	close(p[1]);
	snprintf(link, sizeof link, "/dev/fd/%d", p[0]);
	int r = open(link, O_RDONLY);
	char buf[16] = {0};
	result("open /dev/fd of a pipe", r >= 0);
	result("read it", read(r, buf, sizeof buf - 1));
	printf("  %s\n", buf);
	struct stat a, b;
	char other[64];
	snprintf(other, sizeof other, "/dev/fd/%d", q[0]);
	result("stat both", stat(link, &a) | stat(other, &b));
	printf("two pipes, two files: %d, fifos: %d\n", a.st_ino != b.st_ino, S_ISFIFO(a.st_mode) && S_ISFIFO(b.st_mode));
	snprintf(link, sizeof link, "/proc/self/fd/%d", 99);
	result("readlink closed fd", readlink(link, target, sizeof target));

	FILE *ci = fopen("/proc/cpuinfo", "r");
	int processors = 0;
	char line[1024];
	while (ci && fgets(line, sizeof line, ci))
		processors += strncmp(line, "processor", 9) == 0;
	printf("cpuinfo processors = online: %d\n", processors == sysconf(_SC_NPROCESSORS_ONLN));
	FILE *mi = fopen("/proc/meminfo", "r");
	unsigned long total = 0;
	while (mi && fgets(line, sizeof line, mi))
		sscanf(line, "MemTotal: %lu kB", &total);
	struct sysinfo si;
	sysinfo(&si);
	printf("MemTotal = sysinfo: %d\n", total == si.totalram * si.mem_unit / 1024);

	const char *devs[] = {"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"};
	for (int i = 0; i < 4; i++) {
		struct stat st;
		result(devs[i], stat(devs[i], &st));
		printf("  char %d, %u:%u\n", S_ISCHR(st.st_mode), major(st.st_rdev), minor(st.st_rdev));
	}
	memset(target, 0, sizeof target);
	readlink("/dev/stdin", target, sizeof target - 1);
	printf("/dev/stdin -> %s\n", target);

	char cmd[256] = {0};
	FILE *cl = fopen("/proc/self/cmdline", "r");
	size_t n = cl ? fread(cmd, 1, sizeof cmd, cl) : 0;
	printf("cmdline is argv: %d\n", n == strlen(argv[0]) + strlen(argv[1]) + 2 && strcmp(cmd, argv[0]) == 0 &&
	                                     strcmp(cmd + strlen(argv[0]) + 1, argv[1]) == 0);
	FILE *st = fopen("/proc/self/status", "r");
	int pid_ok = 0, ppid_ok = 0, uid_ok = 0, threads = 0;
	while (st && fgets(line, sizeof line, st)) {
		int v, r;
		if (sscanf(line, "Pid: %d", &v) == 1)
			pid_ok = v == getpid();
		if (sscanf(line, "PPid: %d", &v) == 1)
			ppid_ok = v == getppid();
		if (sscanf(line, "Uid: %d %d", &v, &r) == 2)
			uid_ok = v == (int)getuid() && r == (int)geteuid();
		sscanf(line, "Threads: %d", &threads);
	}
	printf("status: pid %d, ppid %d, uid %d, threads %d\n", pid_ok, ppid_ok, uid_ok, threads);
	FILE *mt = fopen("/proc/mounts", "r");
	int root = 0;
	while (mt && fgets(line, sizeof line, mt))
		root |= strstr(line, " / ") != NULL;
	printf("mounts has the root: %d\n", root);
	FILE *up = fopen("/proc/uptime", "r");
	double since, idle;
	printf("uptime parses: %d\n", up && fscanf(up, "%lf %lf", &since, &idle) == 2 && since >= 0);
	FILE *la = fopen("/proc/loadavg", "r");
	double l1, l5, l15;
	int ready, all, last;
	char comm[32] = {0};
	prctl(PR_GET_NAME, comm);
	printf("named after the path executed: %s\n", comm);
	prctl(PR_SET_NAME, "a-name-longer-than-fifteen");
	memset(comm, 0, sizeof comm);
	prctl(PR_GET_NAME, comm);
	printf("renamed: %s\n", comm);
	FILE *cm = fopen("/proc/self/comm", "r");
	memset(line, 0, sizeof line);
	if (cm && fgets(line, sizeof line, cm))
		printf("/proc/self/comm: %s", line);
	printf("loadavg parses: %d\n", la && fscanf(la, "%lf %lf %lf %d/%d %d", &l1, &l5, &l15, &ready, &all, &last) == 6 && ready >= 1);

	/* stat: pid, comm, state, ppid, pgrp, the threads, where argv and the
	   environment lie (fields 48 to 51) */
	FILE *sf = fopen("/proc/self/stat", "r");
	char stat_line[1024] = {0};
	if (sf && fgets(stat_line, sizeof stat_line, sf)) {
		int pid, ppid, pgrp;
		char state;
		char *after = strrchr(stat_line, ')');
		sscanf(stat_line, "%d", &pid);
		sscanf(after + 2, "%c %d %d", &state, &ppid, &pgrp);
		char *f = after + 2;
		unsigned long field[53] = {0};
		for (int i = 3; i <= 52 && f; i++) {
			field[i] = strtoul(f, NULL, 10);
			f = strchr(f, ' ');
			if (f)
				f++;
		}
		printf("stat: pid %d, comm %.*s, state %c, ppid %d, pgrp %d, threads %lu, argv at cmdline %d, env after it %d\n",
		       pid == getpid(), (int)(after - strchr(stat_line, '(') - 1), strchr(stat_line, '(') + 1, state,
		       ppid == getppid(), pgrp == getpgrp(), field[20], field[48] == (unsigned long)argv[0],
		       field[50] == field[49] && field[51] >= field[50]);
	}
	FILE *sm = fopen("/proc/self/statm", "r");
	unsigned long vsize, resident, shared, text, lib, data, dt;
	printf("statm parses: %d\n", sm && fscanf(sm, "%lu %lu %lu %lu %lu %lu %lu", &vsize, &resident, &shared, &text, &lib, &data, &dt) == 7 &&
	                                  resident <= vsize && text > 0 && data > 0);
	FILE *en = fopen("/proc/self/environ", "r");
	char envbuf[4096] = {0};
	size_t en_n = en ? fread(envbuf, 1, sizeof envbuf - 1, en) : 0;
	extern char **environ;
	int same = 1, count = 0;
	for (size_t at = 0; at < en_n; at += strlen(envbuf + at) + 1, count++)
		same &= environ[count] != NULL && strcmp(envbuf + at, environ[count]) == 0;
	printf("environ is the environment: %d\n", same && environ[count] == NULL);

	/* /proc/PID: the caller's own, and from a child its parent's */
	char own[64];
	snprintf(own, sizeof own, "/proc/%d/comm", getpid());
	FILE *oc = fopen(own, "r");
	memset(line, 0, sizeof line);
	printf("/proc/PID/comm of self: %s", oc && fgets(line, sizeof line, oc) ? line : "missing\n");
	fflush(stdout);
	pid_t parent = getpid();
	if (fork() == 0) {
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/cmdline", parent);
		FILE *pc = fopen(p, "r");
		memset(cmd, 0, sizeof cmd);
		size_t n = pc ? fread(cmd, 1, sizeof cmd, pc) : 0;
		printf("the parent's cmdline from a child: %d\n", n > 0 && strcmp(cmd, argv[0]) == 0);
		snprintf(p, sizeof p, "/proc/%d/exe", parent);
		char exe[256] = {0}, mine[256] = {0};
		readlink(p, exe, sizeof exe - 1);
		readlink("/proc/self/exe", mine, sizeof mine - 1);
		printf("the parent's exe is the child's: %d\n", strcmp(exe, mine) == 0 && exe[0] == '/');
		snprintf(p, sizeof p, "/proc/%d/fd/1", parent);
		struct stat a, b;
		printf("the parent's stdout is the child's: %d\n", stat(p, &a) == 0 && fstat(1, &b) == 0 && a.st_ino == b.st_ino);
		snprintf(p, sizeof p, "/proc/%d/status", 999999);
		printf("a process that is not: %d\n", access(p, F_OK) == -1 && errno == ENOENT);
		fflush(stdout);
		_exit(0);
	}
	wait(NULL);
	return 0;
}
