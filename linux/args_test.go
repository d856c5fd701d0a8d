package linux

import (
	"maps"
	"slices"
	"testing"
)

// linuxCall is a system call as Linux's x86-64 table has it.
type linuxCall struct {
	nr    uint64
	nargs int
}

// linuxCalls are the calls the personality registers, with their numbers
// and argument counts from Linux's x86-64 table (the SYSCALL_DEFINEn that
// declares each; strace's linux/x86_64/syscallent.h lists the same).
var linuxCalls = map[string]linuxCall{
	"read": {0, 3}, "write": {1, 3}, "open": {2, 3}, "close": {3, 1},
	"stat": {4, 2}, "fstat": {5, 2}, "lstat": {6, 2}, "poll": {7, 3},
	"lseek": {8, 3}, "mmap": {9, 6}, "mprotect": {10, 3}, "munmap": {11, 2},
	"brk": {12, 1}, "rt_sigaction": {13, 4}, "rt_sigprocmask": {14, 4}, "rt_sigreturn": {15, 0},
	"ioctl": {16, 3}, "pread64": {17, 4}, "pwrite64": {18, 4}, "readv": {19, 3},
	"writev": {20, 3}, "access": {21, 2}, "pipe": {22, 1}, "select": {23, 5},
	"sched_yield": {24, 0}, "mremap": {25, 5}, "madvise": {28, 3}, "dup": {32, 1},
	"dup2": {33, 2}, "pause": {34, 0}, "nanosleep": {35, 2}, "getitimer": {36, 2},
	"alarm": {37, 1}, "setitimer": {38, 3}, "getpid": {39, 0}, "sendfile": {40, 4},
	"socket": {41, 3}, "connect": {42, 3}, "clone": {56, 5}, "fork": {57, 0},
	"vfork": {58, 0}, "execve": {59, 3}, "exit": {60, 1}, "wait4": {61, 4},
	"kill": {62, 2}, "uname": {63, 1}, "fcntl": {72, 3}, "fsync": {74, 1},
	"fdatasync": {75, 1}, "ftruncate": {77, 2}, "getcwd": {79, 2}, "chdir": {80, 1},
	"rename": {82, 2}, "mkdir": {83, 2}, "creat": {85, 2}, "unlink": {87, 1},
	"readlink": {89, 3}, "fchmod": {91, 2}, "umask": {95, 1}, "gettimeofday": {96, 2},
	"getrlimit": {97, 2}, "getrusage": {98, 2}, "sysinfo": {99, 1}, "getuid": {102, 0},
	"getgid": {104, 0}, "setuid": {105, 1}, "setgid": {106, 1}, "geteuid": {107, 0},
	"getegid": {108, 0}, "setpgid": {109, 2}, "getppid": {110, 0}, "getpgrp": {111, 0},
	"setsid": {112, 0}, "getgroups": {115, 2}, "getpgid": {121, 1}, "getsid": {124, 1},
	"rt_sigsuspend": {130, 2}, "sigaltstack": {131, 2}, "prctl": {157, 5}, "arch_prctl": {158, 2},
	"gettid": {186, 0}, "getxattr": {191, 4}, "lgetxattr": {192, 4}, "fgetxattr": {193, 4},
	"listxattr": {194, 3}, "llistxattr": {195, 3}, "flistxattr": {196, 3}, "tkill": {200, 2},
	"time": {201, 1}, "futex": {202, 6}, "sched_getaffinity": {204, 3}, "getdents64": {217, 3},
	"set_tid_address": {218, 1}, "fadvise64": {221, 4}, "clock_gettime": {228, 2}, "clock_nanosleep": {230, 4},
	"exit_group": {231, 1}, "tgkill": {234, 3}, "waitid": {247, 5}, "openat": {257, 4},
	"mkdirat": {258, 3}, "newfstatat": {262, 4}, "unlinkat": {263, 3}, "renameat": {264, 4},
	"readlinkat": {267, 4}, "faccessat": {269, 3}, "pselect6": {270, 6}, "ppoll": {271, 5},
	"set_robust_list": {273, 2}, "utimensat": {280, 4}, "epoll_create1": {291, 1}, "dup3": {292, 3},
	"pipe2": {293, 2}, "prlimit64": {302, 4}, "renameat2": {316, 5}, "getrandom": {318, 3},
	"statx": {332, 5}, "rseq": {334, 4}, "clone3": {435, 2}, "faccessat2": {439, 4},
}

// Every registered call has Linux's number and argument count: the
// dispatcher hands a handler only the registers its call takes.
func TestArgumentCountsAreLinux(t *testing.T) {
	registered := map[string]bool{}
	for _, nr := range slices.Sorted(maps.Keys(syscalls)) {
		sc := syscalls[nr]
		registered[sc.name] = true
		want, ok := linuxCalls[sc.name]
		switch {
		case !ok:
			t.Errorf("%s (%d) is missing from the reference: add Linux's number and argument count", sc.name, nr)
		case want.nr != nr:
			t.Errorf("%s is registered as number %d; Linux's is %d", sc.name, nr, want.nr)
		case sc.nargs != want.nargs:
			t.Errorf("%s is registered with %d arguments; Linux's takes %d", sc.name, sc.nargs, want.nargs)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(linuxCalls)) {
		if !registered[name] {
			t.Errorf("%s is in the reference but not registered", name)
		}
	}
}
