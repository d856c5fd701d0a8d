/* A parent and its child end at the same SYSCALL (exit_syscall), the child
   first: a breakpoint a debugger sets there in the parent is an int3 in
   code the two share, which the replay steps the child over unseen — a
   step that ends in the child's exit — and which must still be there when
   the parent comes. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

void end(int status); /* exit_group(status) */
__asm__(".text\n"
	".globl end\n.type end, @function\n"
	"end:\n\tmov $231, %eax\n"
	".globl exit_syscall\n.type exit_syscall, @function\n"
	"exit_syscall:\n\tsyscall\n\tud2\n"
	".size exit_syscall, .-exit_syscall\n"
	".size end, .-end\n");

int main(void) {
	pid_t pid = fork();
	if (pid == 0)
		end(3);
	int status;
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	printf("child ended %d\n", WEXITSTATUS(status));
	fflush(stdout);
	end(0);
}
