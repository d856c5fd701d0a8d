/* A process whose child runs the program again (fork, then exec): a
   debugger following both sees the child's breakpoint in the image exec
   gives it. The parent prints what the child's exit said. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int child_work(int n) { return n * 7; } /* the exec'd child's only */

int main(int argc, char **argv) {
	if (argc > 1) {
		printf("child %d\n", child_work(6));
		return 0;
	}
	pid_t pid = fork();
	if (pid == 0) {
		execl(argv[0], argv[0], "child", (char *)0);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	printf("parent saw %d\n", WEXITSTATUS(status));
	return 0;
}
