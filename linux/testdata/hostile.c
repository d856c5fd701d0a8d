#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Hands the kernel bad pointers, descriptors, sizes and numbers; each must
   fail with the right errno. Then dereferences a null pointer. */
static void check(const char *what, long ret, int want) {
	printf("%s: %ld %s\n", what, ret, ret < 0 && errno == want ? "ok" : strerror(errno));
}

int main(void) {
	errno = 0;
	check("write bad pointer", syscall(SYS_write, 1, (void *)8, 10), EFAULT);
	check("read bad fd", syscall(SYS_read, 999, NULL, 10), EBADF);
	check("mmap huge", (long)mmap(NULL, 1UL << 45, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), ENOMEM);
	check("mmap below 2 MiB", (long)mmap((void *)0x10000, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), EINVAL);
	check("open bad path", syscall(SYS_openat, AT_FDCWD, (void *)16, O_RDONLY), EFAULT);
	check("open missing", open("/no/such/file", O_RDONLY), ENOENT);
	check("unknown call", syscall(4000), ENOSYS);
	check("execve missing", syscall(SYS_execve, "/no/such", NULL, NULL), ENOENT);
	char *argv[] = {"x", NULL};
	check("execve bad envp", syscall(SYS_execve, "/bin/hostile", argv, (void *)24), EFAULT);
	check("futex unaligned", syscall(SYS_futex, (char *)&errno + 1, 0, 0, NULL), EINVAL);
	fflush(stdout);
	*(volatile int *)0 = 1;
	return 0;
}
