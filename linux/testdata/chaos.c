#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Calls system calls with random numbers and arguments — small numbers,
   pointers into its own buffer, pointers anywhere — from a seed, and
   prints how many it made. The kernel may refuse them all; the VMM must
   not fail. Calls that end the program or replace it are left out. */
static uint64_t s;
static uint64_t next(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; }

static char buf[1 << 16];

static long arg(void) {
	switch (next() % 6) {
	case 0: return next() % 8;
	case 1: return (long)(buf + next() % sizeof buf);
	case 2: return (long)next();
	case 3: return -(long)(next() % 200);
	case 4: return 4096 * (next() % 64);
	default: return (long)(buf + (next() % 256) * 256);
	}
}

int main(int argc, char **argv) {
	s = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
	int made = 0;
	for (int i = 0; i < 3000; i++) {
		long nr = next() % 340;
		switch (nr) {
		case SYS_exit: case SYS_exit_group: case SYS_execve: case SYS_kill: case SYS_tgkill:
		case SYS_tkill: case SYS_rt_sigreturn: case SYS_pause: case SYS_rt_sigsuspend:
		case SYS_clone: case SYS_fork: case SYS_vfork: case SYS_munmap: case SYS_mremap:
		case SYS_mprotect: case SYS_brk: case SYS_arch_prctl: case SYS_rt_sigaction:
		case SYS_rt_sigprocmask: case SYS_futex: case SYS_nanosleep: case SYS_clock_nanosleep:
		case SYS_wait4: case SYS_waitid: case SYS_read: case SYS_readv: case SYS_pread64:
		case SYS_poll: case SYS_ppoll: case SYS_select: case SYS_pselect6: case SYS_alarm:
		case SYS_setitimer: case SYS_dup2: case SYS_dup3: case SYS_close: case SYS_madvise:
			continue; /* would end, block, or unmap this very program */
		}
		syscall(nr, arg(), arg(), arg(), arg(), arg(), arg());
		made++;
	}
	printf("made %d calls\n", made);
	return 0;
}
