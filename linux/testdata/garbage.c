#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Makes system calls through a raw SYSCALL with garbage in every argument
   register the call does not take, as a program's leftovers would be
   (coreutils mv's renameat found its r8 so), and prints what each
   returns. Its files are in the directory argv[1] names. */

#define JUNK 0xdeadbeefcafef00dL

static long raw(long nr, long a, long b, long c, long d, long e, long f) {
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
	                 : "rcx", "r11", "memory");
	return ret;
}

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	char a[512], b[512], d[512];
	snprintf(a, sizeof a, "%s/a", argv[1]);
	snprintf(b, sizeof b, "%s/b", argv[1]);
	snprintf(d, sizeof d, "%s/d", argv[1]);
	int fd = open(a, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	write(fd, "abc", 3);
	close(fd);

	printf("renameat: %ld\n", raw(SYS_renameat, AT_FDCWD, (long)a, AT_FDCWD, (long)b, JUNK, JUNK));
	printf("old name: %d, new name: %d\n", access(a, F_OK), access(b, F_OK));
	printf("mkdirat: %ld\n", raw(SYS_mkdirat, AT_FDCWD, (long)d, 0755, JUNK, JUNK, JUNK));
	printf("faccessat: %ld\n", raw(SYS_faccessat, AT_FDCWD, (long)b, R_OK, JUNK, JUNK, JUNK));
	fd = open(b, O_RDONLY);
	printf("lseek: %ld\n", raw(SYS_lseek, fd, 0, SEEK_END, JUNK, JUNK, JUNK));
	printf("dup2: %ld\n", raw(SYS_dup2, fd, 10, JUNK, JUNK, JUNK, JUNK));
	int fds[2];
	printf("pipe2: %ld\n", raw(SYS_pipe2, (long)fds, O_CLOEXEC, JUNK, JUNK, JUNK, JUNK));
	printf("kill: %ld\n", raw(SYS_kill, getpid(), 0, JUNK, JUNK, JUNK, JUNK));
	printf("unlinkat dir: %ld\n", raw(SYS_unlinkat, AT_FDCWD, (long)d, AT_REMOVEDIR, JUNK, JUNK, JUNK));
	printf("unlinkat file: %ld\n", raw(SYS_unlinkat, AT_FDCWD, (long)b, 0, JUNK, JUNK, JUNK));
	return 0;
}
