package linux

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
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
	"sched_yield": {24, 0}, "mremap": {25, 5}, "msync": {26, 3}, "mincore": {27, 3}, "madvise": {28, 3}, "dup": {32, 1},
	"dup2": {33, 2}, "pause": {34, 0}, "nanosleep": {35, 2}, "getitimer": {36, 2},
	"alarm": {37, 1}, "setitimer": {38, 3}, "getpid": {39, 0}, "sendfile": {40, 4},
	"socket": {41, 3}, "connect": {42, 3}, "clone": {56, 5}, "fork": {57, 0},
	"vfork": {58, 0}, "execve": {59, 3}, "exit": {60, 1}, "wait4": {61, 4},
	"kill": {62, 2}, "uname": {63, 1}, "fcntl": {72, 3}, "fsync": {74, 1},
	"fdatasync": {75, 1}, "truncate": {76, 2}, "ftruncate": {77, 2}, "fallocate": {285, 4}, "memfd_create": {319, 2}, "getcwd": {79, 2}, "chdir": {80, 1}, "fchdir": {81, 1}, "chmod": {90, 2}, "fchmodat": {268, 3},
	"rename": {82, 2}, "mkdir": {83, 2}, "rmdir": {84, 1}, "creat": {85, 2}, "unlink": {87, 1},
	"readlink": {89, 3}, "fchmod": {91, 2}, "umask": {95, 1}, "gettimeofday": {96, 2},
	"getrlimit": {97, 2}, "getrusage": {98, 2}, "sysinfo": {99, 1}, "getuid": {102, 0},
	"getgid": {104, 0}, "setuid": {105, 1}, "setgid": {106, 1}, "geteuid": {107, 0},
	"getegid": {108, 0}, "setpgid": {109, 2}, "getppid": {110, 0}, "getpgrp": {111, 0},
	"setsid": {112, 0}, "getgroups": {115, 2}, "setgroups": {116, 2}, "getpgid": {121, 1}, "getsid": {124, 1},
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
	"epoll_create": {213, 1}, "epoll_wait": {232, 4}, "epoll_ctl": {233, 4}, "epoll_pwait": {281, 6},
	"eventfd": {284, 1}, "eventfd2": {290, 2}, "epoll_pwait2": {441, 6},
	"timerfd_create": {283, 2}, "timerfd_settime": {286, 4}, "timerfd_gettime": {287, 2},
	"timer_create": {222, 3}, "timer_settime": {223, 4}, "timer_gettime": {224, 2}, "timer_getoverrun": {225, 1},
	"timer_delete": {226, 1}, "setreuid": {113, 2}, "setregid": {114, 2}, "setresuid": {117, 3}, "getresuid": {118, 3},
	"setresgid": {119, 3}, "getresgid": {120, 3}, "capget": {125, 2}, "capset": {126, 2},
	"sched_setaffinity": {203, 3}, "clock_getres": {229, 2}, "getcpu": {309, 3}, "close_range": {436, 3},
	"statfs": {137, 2}, "fstatfs": {138, 2}, "link": {86, 2}, "linkat": {265, 5}, "symlink": {88, 2}, "symlinkat": {266, 3}, "chown": {92, 3}, "fchown": {93, 3}, "lchown": {94, 3}, "fchownat": {260, 5}, "setxattr": {188, 5}, "lsetxattr": {189, 5}, "fsetxattr": {190, 5}, "copy_file_range": {326, 6}, "flock": {73, 2},
	"signalfd": {282, 3}, "signalfd4": {289, 4},
	"accept": {43, 3}, "sendto": {44, 6}, "recvfrom": {45, 6}, "sendmsg": {46, 3}, "recvmsg": {47, 3}, "shutdown": {48, 2}, "socketpair": {53, 4},
	"bind": {49, 3}, "listen": {50, 2}, "getsockname": {51, 3}, "getpeername": {52, 3}, "setsockopt": {54, 5},
	"getsockopt": {55, 5}, "accept4": {288, 4}, "recvmmsg": {299, 5}, "sendmmsg": {307, 4},
	"utime": {132, 2}, "utimes": {235, 2}, "futimesat": {261, 3},
	"rt_sigpending": {127, 2}, "pkey_mprotect": {329, 4}, "pkey_alloc": {330, 2}, "pkey_free": {331, 1},
}

// Every registered call has Linux's number and argument count: the
// dispatcher hands a handler only the registers its call takes.
func TestArgumentCountsAreLinux(t *testing.T) {
	registered := map[string]bool{}
	for i, sc := range syscalls {
		if sc.name == "" {
			continue
		}
		nr := uint64(i)
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

// callCase is how TestUntakenRegistersDoNotMatter issues one registered
// call: its arguments, or why it cannot be issued on a kernel that goes
// on serving calls.
type callCase struct {
	name string
	a    args
	skip string
}

// The scratch area: the test program's memory, mapped with the mmap
// handler, and what is at each offset in it.
const (
	scratchBytes = 0x10000
	offPathA     = 0x000 // "/tmp/t/a", and so on: the strings of scratchStrings
	offPathB     = 0x040
	offPathC     = 0x080
	offPathD     = 0x0c0
	offPathE     = 0x100
	offExe       = 0x140
	offSelf      = 0x180
	offRoot      = 0x1c0
	offNameC     = 0x200
	offXattr     = 0x240
	offTmp       = 0x280
	offLinkA     = 0x2c0 // "/tmp/t/s1", "/tmp/t/s2": symbolic links' names
	offLinkB     = 0x300
	offBuf       = 0x1000 // "hello, world\n", then what the I/O calls read
	offOut       = 0x2000 // where calls write what they report
	offIOV       = 0x3000 // one iovec: 16 bytes at offBuf
	offZeroTime  = 0x3100 // a zero timespec or timeval
	offTimer     = 0x3200 // an itimerval: 100 s, no interval
	offSigset    = 0x3300 // SIGUSR2
	offAction    = 0x3400 // a sigaction: SIG_IGN
	offAltStack  = 0x3500 // a stack_t: the 8 KiB at offStack
	offPollFD    = 0x3600 // a pollfd: fdFile, POLLIN|POLLOUT
	offFDSet     = 0x3700 // an fd_set: fdFile
	offOffset    = 0x3800 // sendfile's offset: 0
	offPipeFDs   = 0x3900
	offFutex     = 0x3a00 // a futex word: 0
	offEpollEv   = 0x3b00 // an epoll_event: EPOLLIN|EPOLLOUT, data 0x1234
	offCapHdr    = 0x3c00 // a capability header: version 3, pid 0
	offZeros     = 0x3d00 // 64 bytes never written: no capabilities
	offCPUSet    = 0x3e00 // a CPU set: CPU 0
	offStack     = 0x8000
	offMap       = 0xc000 // 8 KiB the memory calls remap
)

// scratchStrings are the NUL-terminated strings the scratch area holds.
var scratchStrings = map[uint64]string{
	offPathA: "/tmp/t/a", offPathB: "/tmp/t/b", offPathC: "/tmp/t/c", offPathD: "/tmp/t/d", offPathE: "/tmp/t/e",
	offExe: "/bin/hello", offSelf: "/proc/self/exe", offRoot: "/", offNameC: "c", offXattr: "user.x", offTmp: "/tmp/t",
	offLinkA: "/tmp/t/s1", offLinkB: "/tmp/t/s2",
	offBuf: "hello, world\n",
}

// The descriptors the test program opens before the calls.
const (
	fdExe  = 3 // /bin/hello, read-only
	fdTmp  = 4 // the directory /tmp/t, the machine's own (the host's /tmp changes as other tests run: getdents64 read it)
	fdFile = 5 // /tmp/t/a, read-write: it becomes /tmp/t/c
)

// callCases issue every registered call, in an order in which each does
// real work: valid descriptors, paths and buffers in the scratch area at
// s, small sizes, and nothing that blocks.
func callCases(s uint64) []callCase {
	const (
		cwd       = atFDCWD
		fdNew     = 8 // creat's: after openat's and open's
		fdEpoll   = 9 // epoll_create1's: after dup's
		fdEventfd = 12
	)
	return []callCase{
		{name: "read", a: args{fdExe, s + offBuf, 64}},
		{name: "pread64", a: args{fdExe, s + offBuf, 64, 16}},
		{name: "readv", a: args{fdExe, s + offIOV, 1}},
		{name: "write", a: args{fdFile, s + offBuf, 64}},
		{name: "pwrite64", a: args{fdFile, s + offBuf, 32, 100}},
		{name: "writev", a: args{fdFile, s + offIOV, 1}},
		{name: "lseek", a: args{fdFile, 0, unix.SEEK_SET}},
		{name: "sendfile", a: args{fdFile, fdExe, s + offOffset, 128}},
		{name: "getdents64", a: args{fdTmp, s + offOut, 4096}},
		{name: "openat", a: args{cwd, s + offPathB, unix.O_RDWR | unix.O_CREAT, 0o600}},
		{name: "open", a: args{s + offExe, unix.O_RDONLY, 0}},
		{name: "creat", a: args{s + offPathC, 0o644}},
		{name: "close", a: args{fdNew}},
		{name: "ioctl", a: args{fdFile, unix.TCGETS, s + offOut}},
		{name: "fcntl", a: args{fdFile, unix.F_GETFL, 0}},
		{name: "flock", a: args{fdFile, unix.LOCK_EX | unix.LOCK_NB}},
		{name: "dup", a: args{fdFile}},
		{name: "dup2", a: args{fdFile, 20}},
		{name: "dup3", a: args{fdFile, 21, unix.O_CLOEXEC}},
		{name: "mkdir", a: args{s + offPathD, 0o755}},
		{name: "mkdirat", a: args{cwd, s + offPathE, 0o700}},
		{name: "unlink", a: args{s + offPathC}},
		{name: "unlinkat", a: args{cwd, s + offPathE, unix.AT_REMOVEDIR}},
		{name: "rmdir", a: args{s + offPathD}},
		{name: "link", a: args{s + offPathB, s + offPathD}},
		{name: "linkat", a: args{cwd, s + offPathD, cwd, s + offPathE, 0}},
		{name: "access", a: args{s + offExe, unix.X_OK}},
		{name: "faccessat", a: args{cwd, s + offExe, unix.X_OK}},
		{name: "faccessat2", a: args{cwd, s + offExe, unix.R_OK, 0}},
		{name: "chown", a: args{s + offPathB, testUID, testGID}},
		{name: "fchown", a: args{fdFile, ^uint64(0), testGID}},
		{name: "lchown", a: args{s + offPathB, testUID, ^uint64(0)}},
		{name: "fchownat", a: args{cwd, s + offPathB, testUID, testGID, 0}},
		{name: "setxattr", a: args{s + offPathB, s + offXattr, s + offBuf, 4, 0}},
		{name: "lsetxattr", a: args{s + offPathB, s + offXattr, s + offBuf, 4, 0}},
		{name: "fsetxattr", a: args{fdFile, s + offXattr, s + offBuf, 4, 0}},
		{name: "copy_file_range", a: args{fdFile, 0, fdFile, 0, 4, 0}}, // overlapping: EINVAL
		{name: "symlink", a: args{s + offPathA, s + offLinkA}},
		{name: "symlinkat", a: args{s + offPathA, cwd, s + offLinkB}},
		{name: "readlink", a: args{s + offSelf, s + offOut, 64}},
		{name: "readlinkat", a: args{cwd, s + offSelf, s + offOut, 64}},
		{name: "getcwd", a: args{s + offOut, 64}},
		{name: "chdir", a: args{s + offTmp}},
		{name: "fchdir", a: args{fdTmp}},
		{name: "rename", a: args{s + offPathA, s + offPathC}},
		{name: "renameat", a: args{cwd, s + offPathC, cwd, s + offPathA}},
		{name: "renameat2", a: args{cwd, s + offPathA, cwd, s + offPathC, 0}},
		{name: "stat", a: args{s + offExe, s + offOut}},
		{name: "lstat", a: args{s + offExe, s + offOut}},
		{name: "fstat", a: args{fdFile, s + offOut}},
		{name: "statfs", a: args{s + offTmp, s + offOut}},
		{name: "fstatfs", a: args{fdFile, s + offOut}},
		{name: "newfstatat", a: args{fdTmp, s + offNameC, s + offOut, 0}},
		{name: "statx", a: args{cwd, s + offExe, 0, unix.STATX_BASIC_STATS, s + offOut}},
		{name: "ftruncate", a: args{fdFile, 10}},
		{name: "truncate", a: args{s + offPathB, 12}},
		{name: "fallocate", a: args{fdFile, 0, 0, 16}},
		{name: "fsync", a: args{fdFile}},
		{name: "fdatasync", a: args{fdFile}},
		{name: "fadvise64", a: args{fdFile, 0, 0, unix.FADV_NORMAL}},
		{name: "fchmod", a: args{fdFile, 0o600}},
		{name: "chmod", a: args{s + offPathB, 0o640}},
		{name: "fchmodat", a: args{cwd, s + offPathB, 0o600}},
		{name: "getxattr", a: args{s + offExe, s + offXattr, s + offOut, 64}},
		{name: "lgetxattr", a: args{s + offExe, s + offXattr, s + offOut, 64}},
		{name: "fgetxattr", a: args{fdExe, s + offXattr, s + offOut, 64}},
		{name: "listxattr", a: args{s + offExe, s + offOut, 64}},
		{name: "llistxattr", a: args{s + offExe, s + offOut, 64}},
		{name: "flistxattr", a: args{fdExe, s + offOut, 64}},
		{name: "utimensat", a: args{cwd, s + offExe, 0, 0}},
		{name: "utimes", a: args{s + offExe, 0}},
		{name: "futimesat", a: args{cwd, s + offExe, 0}},
		{name: "utime", a: args{s + offExe, 0}},
		{name: "brk", a: args{0}},
		{name: "mmap", a: args{s + offMap, 0x2000, unix.PROT_READ | unix.PROT_WRITE, unix.MAP_PRIVATE | unix.MAP_FIXED, fdExe, 0}},
		{name: "mprotect", a: args{s + offMap, 0x1000, unix.PROT_READ}},
		{name: "pkey_mprotect", a: args{s + offMap, 0x1000, unix.PROT_READ, ^uint64(0)}},
		{name: "pkey_alloc", a: args{0, 0}},
		{name: "pkey_free", a: args{1}},
		{name: "msync", a: args{s + offMap, 0x2000, unix.MS_SYNC}},
		{name: "mincore", a: args{s + offMap, 0x2000, s + offOut}},
		{name: "madvise", a: args{s + offMap, 0x2000, unix.MADV_DONTNEED}},
		{name: "mremap", a: args{s + offMap, 0x2000, 0x1000, 0, 0}},
		{name: "munmap", a: args{s + offMap, 0x1000}},
		{name: "umask", a: args{0o077}},
		{name: "setpgid", a: args{0, 0}},
		{name: "getpgid", a: args{0}},
		{name: "getpgrp"},
		{name: "getsid", a: args{0}},
		{name: "setsid"},
		{name: "getgroups", a: args{0, 0}},
		{name: "setgroups", a: args{0, 0}},
		{name: "setuid", a: args{testUID}},
		{name: "setgid", a: args{testGID}},
		{name: "setreuid", a: args{testUID, ^uint64(0)}},
		{name: "setregid", a: args{^uint64(0), testGID}},
		{name: "setresuid", a: args{testUID, testUID, ^uint64(0)}},
		{name: "setresgid", a: args{testGID, ^uint64(0), testGID}},
		{name: "getresuid", a: args{s + offOut, s + offOut + 4, s + offOut + 8}},
		{name: "getresgid", a: args{s + offOut, s + offOut + 4, s + offOut + 8}},
		{name: "capget", a: args{s + offCapHdr, s + offOut}},
		{name: "capset", a: args{s + offCapHdr, s + offZeros}},
		{name: "sched_setaffinity", a: args{0, 8, s + offCPUSet}},
		{name: "getcpu", a: args{s + offOut, s + offOut + 4, 0}},
		{name: "clock_getres", a: args{unix.CLOCK_MONOTONIC, s + offOut}},
		{name: "close_range", a: args{20, 21, unix.CLOSE_RANGE_CLOEXEC}},
		{name: "prctl", a: args{unix.PR_GET_NAME, s + offOut}},
		{name: "sysinfo", a: args{s + offOut}},
		{name: "getrusage", a: args{unix.RUSAGE_SELF, s + offOut}},
		{name: "socket", a: args{unix.AF_INET, unix.SOCK_STREAM, 0}},
		{name: "connect", a: args{fdExe, s + offOut, 16}},
		{name: "accept", a: args{fdExe, s + offOut, s + offOut + 64}},
		{name: "accept4", a: args{fdExe, s + offOut, s + offOut + 64, 0}},
		{name: "sendto", a: args{fdExe, s + offBuf, 4, 0, 0, 0}},
		{name: "recvfrom", a: args{fdExe, s + offOut, 4, 0, 0, 0}},
		{name: "sendmsg", a: args{fdExe, s + offOut, 0}},
		{name: "recvmsg", a: args{fdExe, s + offOut, 0}},
		{name: "sendmmsg", a: args{fdExe, s + offOut, 1, 0}},
		{name: "recvmmsg", a: args{fdExe, s + offOut, 1, 0, 0}},
		{name: "shutdown", a: args{fdExe, unix.SHUT_RDWR}},
		{name: "bind", a: args{fdExe, s + offOut, 16}},
		{name: "listen", a: args{fdExe, 8}},
		{name: "getsockname", a: args{fdExe, s + offOut, s + offOut + 64}},
		{name: "getpeername", a: args{fdExe, s + offOut, s + offOut + 64}},
		{name: "setsockopt", a: args{fdExe, unix.SOL_SOCKET, unix.SO_REUSEADDR, s + offOut, 4}},
		{name: "getsockopt", a: args{fdExe, unix.SOL_SOCKET, unix.SO_TYPE, s + offOut, s + offOut + 64}},
		{name: "epoll_create1", a: args{0}}, // fdEpoll
		{name: "epoll_create", a: args{1}},
		{name: "eventfd", a: args{3}},
		{name: "eventfd2", a: args{0, unix.EFD_NONBLOCK | unix.EFD_SEMAPHORE}}, // fdEventfd
		{name: "epoll_ctl", a: args{fdEpoll, unix.EPOLL_CTL_ADD, fdEventfd, s + offEpollEv}},
		{name: "epoll_wait", a: args{fdEpoll, s + offOut, 4, 0}},
		{name: "epoll_pwait", a: args{fdEpoll, s + offOut, 4, 0, 0, 8}},
		{name: "epoll_pwait2", a: args{fdEpoll, s + offOut, 4, s + offZeroTime, 0, 8}},
		{name: "timerfd_create", a: args{unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK}}, // fdEventfd+1
		{name: "timerfd_settime", a: args{fdEventfd + 1, 0, s + offTimer, s + offOut}},
		{name: "timerfd_gettime", a: args{fdEventfd + 1, s + offOut}},
		{name: "signalfd4", a: args{^uint64(0), s + offSigset, 8, unix.SFD_NONBLOCK}},
		{name: "signalfd", a: args{^uint64(0), s + offSigset, 8}},
		{name: "timer_create", a: args{unix.CLOCK_MONOTONIC, 0, s + offOut}}, // timer 0
		{name: "timer_settime", a: args{0, 0, s + offTimer, 0}},
		{name: "timer_gettime", a: args{0, s + offOut}},
		{name: "timer_getoverrun", a: args{0}},
		{name: "timer_delete", a: args{0}},
		{name: "memfd_create", a: args{s + offPathA, 1}}, // MFD_CLOEXEC
		{name: "socketpair", a: args{unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, 0, s + offOut}},
		{name: "getpid"},
		{name: "gettid"},
		{name: "getppid"},
		{name: "getuid"},
		{name: "geteuid"},
		{name: "getgid"},
		{name: "getegid"},
		{name: "sched_yield"},
		{name: "set_tid_address", a: args{s + offFutex}},
		{name: "set_robust_list", a: args{s + offOut, 24}},
		{name: "rseq", a: args{s + offOut, 32, 0, 0x53053053}},
		{name: "arch_prctl", a: args{archGetFS, s + offOut}},
		{name: "uname", a: args{s + offOut}},
		{name: "prlimit64", a: args{0, unix.RLIMIT_STACK, 0, s + offOut}},
		{name: "getrlimit", a: args{unix.RLIMIT_NOFILE, s + offOut}},
		{name: "sched_getaffinity", a: args{0, 8, s + offOut}},
		{name: "clock_gettime", a: args{unix.CLOCK_MONOTONIC, s + offOut}},
		{name: "gettimeofday", a: args{s + offOut, 0}},
		// The seconds time returns are the host's clock, which may tick
		// between the two kernels' calls: a pointer it cannot write makes
		// the result exact.
		{name: "time", a: args{0x1000}},
		{name: "nanosleep", a: args{s + offZeroTime, 0}},
		{name: "clock_nanosleep", a: args{unix.CLOCK_MONOTONIC, 0, s + offZeroTime, 0}},
		{name: "getrandom", a: args{s + offOut, 16, 0}},
		{name: "setitimer", a: args{unix.ITIMER_REAL, s + offTimer, s + offOut}},
		{name: "getitimer", a: args{unix.ITIMER_REAL, s + offOut}},
		{name: "alarm", a: args{0}},
		{name: "futex", a: args{s + offFutex, futexWake, 1, 0, 0, 0}},
		{name: "pipe", a: args{s + offPipeFDs}},
		{name: "pipe2", a: args{s + offPipeFDs, unix.O_NONBLOCK}},
		{name: "poll", a: args{s + offPollFD, 1, 0}},
		{name: "ppoll", a: args{s + offPollFD, 1, s + offZeroTime, 0, 8}},
		{name: "select", a: args{fdFile + 1, 0, s + offFDSet, 0, s + offZeroTime}},
		{name: "pselect6", a: args{fdFile + 1, 0, s + offFDSet, 0, s + offZeroTime, 0}},
		{name: "rt_sigaction", a: args{uint64(unix.SIGUSR1), s + offAction, s + offOut, 8}},
		{name: "rt_sigprocmask", a: args{unix.SIG_BLOCK, s + offSigset, s + offOut, 8}},
		{name: "sigaltstack", a: args{s + offAltStack, s + offOut}},
		{name: "kill", a: args{pid, 0}},
		{name: "tkill", a: args{pid, 0}},
		{name: "tgkill", a: args{pid, pid, 0}},
		{name: "rt_sigreturn", skip: "takes every register from a signal frame on the stack: there is no result to compare"},
		{name: "pause", skip: "blocks until a signal"},
		{name: "rt_sigsuspend", skip: "blocks until a signal"},
		{name: "rt_sigpending", a: args{s + offOut, 8}},
		// A successful exec would replace the program: /tmp/t/b is no
		// executable, so this one looks the file up and fails.
		{name: "execve", a: args{s + offPathB, 0, 0}},
		{name: "exit", skip: "ends the thread"},
		{name: "exit_group", skip: "ends the program"},
		{name: "clone", a: args{threadFlags | unix.CLONE_SYSVSEM, 0, 0, 0, 0}},
		{name: "clone3", a: args{s + offOut, 88}},
		{name: "fork"},
		{name: "vfork"},
		{name: "wait4", a: args{^uint64(0), s + offOut, wnohang, 0}},
		{name: "waitid", a: args{pAll, 0, s + offOut, wExited | wnohang, 0}},
	}
}

// garbage is what the program left in the registers a call does not take,
// on the second kernel: each register a different pattern.
var garbage = [...]uint64{
	0xdeadbeefcafef00d, 0xfeedfacebaadf00d, 0x8badf00ddeadc0de,
	0xcafebabe0badcafe, 0xdeadbeef00000001, 0xffffffffffffff9c, // the last one AT_FDCWD
}

// callKernel is a booted kernel the test issues calls on: with zeros in
// the registers a call does not take or, if junk, with garbage there.
type callKernel struct {
	k     *Kernel
	junk  bool
	trace bytes.Buffer
}

func newCallKernel(t testing.TB, junk bool) *callKernel {
	t.Helper()
	ck := &callKernel{k: bootedKernel(t), junk: junk}
	ck.k.Trace(&ck.trace)
	c := ck.k.m.VCPU()
	regs, err := c.Regs() // the program at its entry, as a SYSCALL exit would leave them synced
	require.NoError(t, err)
	*c.SyncedRegs() = regs
	return ck
}

// issue serves the call as the program's SYSCALL would have it served:
// its number and Linux's argument count from the reference, a in the
// argument registers. It returns rax and the call's trace line.
func (ck *callKernel) issue(t testing.TB, name string, a args) (uint64, string) {
	t.Helper()
	call := linuxCalls[name]
	r := ck.k.m.VCPU().SyncedRegs()
	r.RBX, r.RBP, r.R12, r.R13, r.R14, r.R15 = 0, 0, 0, 0, 0, 0
	if ck.junk {
		copy(a[call.nargs:], garbage[call.nargs:])
		r.RBX, r.RBP, r.R12, r.R13, r.R14, r.R15 = garbage[0], garbage[1], garbage[2], garbage[3], garbage[4], garbage[5]
	}
	ck.trace.Reset()
	rax, err := ck.serve(call.nr, a)
	require.NoError(t, err, name)
	return rax, ck.trace.String()
}

// serve has the kernel serve call nr, a in its argument registers, as at
// the exit of the program's SYSCALL, and returns rax.
func (ck *callKernel) serve(nr uint64, a args) (uint64, error) {
	c := ck.k.m.VCPU()
	r := c.SyncedRegs()
	r.RAX = nr
	r.RDI, r.RSI, r.RDX, r.R10, r.R8, r.R9 = a[0], a[1], a[2], a[3], a[4], a[5]
	r.RCX, r.R11 = r.RIP, r.RFLAGS // SYSCALL's return address and flags
	err := ck.k.Exit(abi.PortSyscall)
	return c.SyncedRegs().RAX, err
}

// prepare maps the scratch area, fills it and opens the test's
// descriptors, and returns the area's address.
func (ck *callKernel) prepare(t testing.TB) uint64 {
	t.Helper()
	s, _ := ck.issue(t, "mmap", args{0, scratchBytes, unix.PROT_READ | unix.PROT_WRITE, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS, ^uint64(0), 0})
	require.Less(t, s, uint64(maxUserAddr), "mmap of the scratch area: %#x", s)
	as := ck.k.proc().as
	for off, str := range scratchStrings {
		require.NoError(t, as.Write(s+off, append([]byte(str), 0)))
	}
	put := func(off uint64, words ...uint64) {
		b := make([]byte, 8*len(words))
		for i, w := range words {
			binary.LittleEndian.PutUint64(b[i*8:], w)
		}
		require.NoError(t, as.Write(s+off, b))
	}
	put(offIOV, s+offBuf, 16)
	put(offTimer, 0, 0, 100, 0)
	put(offSigset, sigbit(uint64(unix.SIGUSR2)))
	put(offAction, sigIGN, 0, 0, 0)
	put(offAltStack, s+offStack, 0, 0x2000)
	put(offPollFD, fdFile|uint64(unix.POLLIN|unix.POLLOUT)<<32)
	put(offFDSet, 1<<fdFile)
	put(offEpollEv, unix.EPOLLIN|unix.EPOLLOUT|0x1234<<32, 0)
	put(offCapHdr, 0x20080522)
	put(offCPUSet, 1)
	if r, _ := ck.issue(t, "mkdir", args{s + offTmp, 0o755}); r != 0 {
		t.Fatalf("mkdir /tmp/t = %d", int64(r))
	}
	for _, o := range []struct {
		fd uint64
		a  args
	}{
		{fdExe, args{atFDCWD, s + offExe, unix.O_RDONLY}},
		{fdTmp, args{atFDCWD, s + offTmp, unix.O_RDONLY | unix.O_DIRECTORY}},
		{fdFile, args{atFDCWD, s + offPathA, unix.O_RDWR | unix.O_CREAT, 0o644}},
	} {
		fd, _ := ck.issue(t, "openat", o.a)
		require.Equal(t, o.fd, fd, "openat")
	}
	return s
}

// TestUntakenRegistersDoNotMatter issues every registered call on two
// kernels booted alike, the same calls with the same arguments, one with
// zeros in every register the call does not take and one with garbage
// there: each call must return the same on both, and its trace must show
// exactly the arguments it takes.
func TestUntakenRegistersDoNotMatter(t *testing.T) {
	clean, dirty := newCallKernel(t, false), newCallKernel(t, true)
	s := clean.prepare(t)
	require.Equal(t, s, dirty.prepare(t), "the two kernels map their scratch areas alike")

	cases := callCases(s)
	registered := map[string]handler{}
	for _, sc := range syscalls {
		if sc.name != "" {
			registered[sc.name] = sc.fn
		}
	}
	covered := map[string]bool{}
	for _, c := range cases {
		_, ok := registered[c.name]
		require.True(t, ok, "%s is not a registered call", c.name)
		require.False(t, covered[c.name], "%s is issued twice", c.name)
		covered[c.name] = true
	}
	for name := range registered {
		require.True(t, covered[name], "%s is registered but the test does not issue it: add it to callCases", name)
	}

	diverged := ""
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			switch {
			case c.skip != "":
				t.Skip(c.skip)
			case diverged != "":
				t.Skipf("the kernels diverged at %s", diverged)
			}
			n := linuxCalls[c.name].nargs
			require.Equal(t, make([]uint64, len(c.a)-n), c.a[n:], "the case gives %s more than its %d arguments", c.name, n)
			want, wantTrace := clean.issue(t, c.name, c.a)
			got, gotTrace := dirty.issue(t, c.name, c.a)
			t.Logf("%s = %#x", c.name, want)
			if want != got {
				diverged = c.name
			}
			require.Equal(t, int64(want), int64(got), "%s with garbage in the registers it does not take", c.name)
			if registered[c.name] == nil {
				return // answered ENOSYS, untraced
			}
			hex := make([]string, n)
			for i, v := range c.a[:n] {
				hex[i] = fmt.Sprintf("%#x", v)
			}
			call := fmt.Sprintf("] %s(%s) = ", c.name, strings.Join(hex, ", "))
			require.Contains(t, wantTrace, call)
			require.Contains(t, gotTrace, call)
			require.Equal(t, wantTrace, gotTrace)
		})
	}
}
