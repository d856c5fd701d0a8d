/* A process that starts as root and drops to nobody, as servers do: its
   ids and groups after each call (setresuid, setreuid, setuid, setgid,
   setgroups), what it may no longer do (take root back, read a file only
   root may, write into a directory root keeps to itself, signal a root
   process), what it may still do (signal itself, create a file in a
   directory anyone may write, owned by nobody), /proc/self/status's
   lines, and a fork inheriting the ids. Run as root (the test skips it
   otherwise; it makes /tmp/reprise-creds). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "result.h"

static void ids(const char *when) {
	uid_t r, e, s;
	gid_t gr, ge, gs;
	getresuid(&r, &e, &s);
	getresgid(&gr, &ge, &gs);
	gid_t groups[8];
	int n = getgroups(8, groups);
	printf("%s: uid %u %u %u gid %u %u %u groups %d:", when, r, e, s, gr, ge, gs, n);
	for (int i = 0; i < n; i++)
		printf(" %u", groups[i]);
	printf("\n");
}

static void status(void) {
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		if (!strncmp(line, "Uid:", 4) || !strncmp(line, "Gid:", 4) || !strncmp(line, "Groups:", 7))
			printf("%s\n", line);
}

int main(void) {
	setvbuf(stdout, NULL, _IONBF, 0);
	const char *dir = "/tmp/reprise-creds"; /* root's: secret (0600), closed/ (0700), open/ (0777) */
	char secret[256], mine[256], theirs[256];
	snprintf(secret, sizeof secret, "%s/secret", dir);
	snprintf(mine, sizeof mine, "%s/open/mine", dir);
	snprintf(theirs, sizeof theirs, "%s/closed/mine", dir);
	ids("start");
	pid_t parent = getpid();
	pid_t child = fork();
	if (child == 0) {
		gid_t nogroup = 65534;
		result("setgroups", setgroups(1, &nogroup));
		result("setresgid", setresgid(65534, 65534, -1));
		ids("groups dropped");
		result("setreuid to 65534 effective", setreuid(-1, 65534));
		ids("setreuid");
		result("setuid back to 0 (saved)", setuid(0));
		ids("back");
		result("setuid 65534", setuid(65534));
		ids("dropped");
		result("setuid 0 again", setuid(0));
		result("seteuid 0", seteuid(0));
		result("setgroups as nobody", setgroups(1, &nogroup));
		result("open root's file", open(secret, O_RDONLY));
		result("create in root's directory", open(theirs, O_CREAT | O_WRONLY, 0644));
		result("create where anyone may", open(mine, O_CREAT | O_WRONLY, 0644) >= 0 ? 1 : -1);
		struct stat st;
		result("stat it", stat(mine, &st) == 0 ? (long)st.st_uid : -1);
		result("signal root", kill(parent, 0));
		result("signal itself", kill(getpid(), 0));
		status();
		pid_t grandchild = fork();
		if (grandchild == 0) {
			ids("grandchild");
			_exit(0);
		}
		waitpid(grandchild, NULL, 0);
		_exit(0);
	}
	int st;
	waitpid(child, &st, 0);
	result("child exit", WEXITSTATUS(st));
	ids("parent still");
	result("setresuid as root", setresuid(1000, 1000, 1000));
	ids("became 1000");
	return 0;
}
