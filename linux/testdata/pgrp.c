/* Process groups and sessions, as Linux keeps them: a child is in its
   parent's group until setpgid moves it; kill(0, …) signals the caller's
   group only, kill(-g, …) group g (timeout(1) does both); setsid makes a
   new session unless the caller leads a group; the errors for a process
   that is no child, a missing one, a negative group. What is printed
   does not depend on the group the test runs in. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "result.h"

static volatile int got;

static void on_usr1(int sig) { got++; }

int main(void) {
	signal(SIGUSR1, on_usr1);
	pid_t me = getpid();
	int pipefd[2];
	if (pipe(pipefd))
		return 1;
	pid_t child = fork();
	if (child == 0) {
		printf("child in parent's group: %d\n", getpgrp() == getpgid(getppid()));
		fflush(stdout);
		result("setpgid own group", setpgid(0, 0));
		printf("child leads its group: %d\n", getpgrp() == getpid());
		result("kill(0) in own group", kill(0, SIGUSR1));
		printf("child got its own signal: %d\n", got);
		result("setsid as group leader", setsid());
		pid_t grand = fork();
		if (grand == 0) {
			printf("grandchild in child's group: %d\n", getpgrp() == getppid());
			printf("setsid: %d\n", setsid() == getpid());
			printf("own session: %d\n", getsid(0) == getpid());
			fflush(stdout);
			_exit(0);
		}
		waitpid(grand, NULL, 0);
		sigset_t usr1, none;
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigemptyset(&none);
		sigprocmask(SIG_BLOCK, &usr1, NULL); /* until it waits for it */
		char c = 'x';
		if (write(pipefd[1], &c, 1) != 1)
			_exit(1);
		sigsuspend(&none); /* until the parent's kill(-pgid) */
		printf("child got the group's signal: %d\n", got);
		fflush(stdout);
		_exit(0);
	}
	char c;
	if (read(pipefd[0], &c, 1) != 1)
		return 1;
	printf("parent untouched by the child's kill(0): %d\n", got);
	result("setpgid of the child into a missing group", setpgid(child, 99999));
	result("setpgid of a missing process", setpgid(99999, 0));
	result("setpgid negative group", setpgid(0, -1));
	result("getpgid missing", getpgid(99999));
	result("kill a missing group", kill(-99999, SIGUSR1));
	long killed = kill(-getpgid(child), SIGUSR1);
	int status;
	waitpid(child, &status, 0);
	result("kill the child's group", killed);
	printf("child exited %d, parent got %d\n", WEXITSTATUS(status), got);
	printf("same session: %d\n", getsid(0) == getsid(me));
	return 0;
}
