package linux

import "golang.org/x/sys/unix"

//go:generate sh -c "awk -f names.awk /usr/include/x86_64-linux-gnu/asm/unistd_64.h | gofmt > names.go"

// handler serves one system call for the thread that made it. It returns
// the value for rax, or an errno, or an error that ends the run (the
// program exited, or the VMM failed).
type handler func(t *thread, a args) (uint64, error)

// sysCall is a system call the personality knows: its name, how many
// arguments it takes (Linux's count on x86-64), and its handler (nil:
// answered ENOSYS on purpose, as a program falls back from it).
type sysCall struct {
	name  string
	nargs int
	fn    handler
}

// syscalls is the one place that says what is implemented: every call the
// personality serves, by number, with its handler in sys_*.go. A number
// not here is answered ENOSYS and counted under its Linux name (names.go).
// An array indexed by number: every call looks itself up here.
var syscalls = [tableSize]sysCall{
	unix.SYS_READ:              {"read", 3, sysRead},                          // 0
	unix.SYS_WRITE:             {"write", 3, sysWrite},                        // 1
	unix.SYS_OPEN:              {"open", 3, sysOpen},                          // 2
	unix.SYS_CLOSE:             {"close", 1, sysClose},                        // 3
	unix.SYS_STAT:              {"stat", 2, sysStat},                          // 4
	unix.SYS_FSTAT:             {"fstat", 2, sysFstat},                        // 5
	unix.SYS_LSTAT:             {"lstat", 2, sysLstat},                        // 6
	unix.SYS_POLL:              {"poll", 3, sysPoll},                          // 7
	unix.SYS_LSEEK:             {"lseek", 3, sysLseek},                        // 8
	unix.SYS_MMAP:              {"mmap", 6, sysMmap},                          // 9
	unix.SYS_MPROTECT:          {"mprotect", 3, sysMprotect},                  // 10
	unix.SYS_MUNMAP:            {"munmap", 2, sysMunmap},                      // 11
	unix.SYS_BRK:               {"brk", 1, sysBrk},                            // 12
	unix.SYS_RT_SIGACTION:      {"rt_sigaction", 4, sysRtSigaction},           // 13
	unix.SYS_RT_SIGPROCMASK:    {"rt_sigprocmask", 4, sysRtSigprocmask},       // 14
	unix.SYS_RT_SIGRETURN:      {"rt_sigreturn", 0, sysRtSigreturn},           // 15
	unix.SYS_IOCTL:             {"ioctl", 3, sysIoctl},                        // 16
	unix.SYS_PREAD64:           {"pread64", 4, sysPread},                      // 17
	unix.SYS_PWRITE64:          {"pwrite64", 4, sysPwrite},                    // 18
	unix.SYS_READV:             {"readv", 3, sysReadv},                        // 19
	unix.SYS_WRITEV:            {"writev", 3, sysWritev},                      // 20
	unix.SYS_ACCESS:            {"access", 2, sysAccess},                      // 21
	unix.SYS_PIPE:              {"pipe", 1, sysPipe},                          // 22
	unix.SYS_SELECT:            {"select", 5, sysSelect},                      // 23
	unix.SYS_SCHED_YIELD:       {"sched_yield", 0, sysSchedYield},             // 24
	unix.SYS_MREMAP:            {"mremap", 5, sysMremap},                      // 25
	unix.SYS_MSYNC:             {"msync", 3, sysMsync},                        // 26
	unix.SYS_MINCORE:           {"mincore", 3, sysMincore},                    // 27
	unix.SYS_MADVISE:           {"madvise", 3, sysMadvise},                    // 28
	unix.SYS_DUP:               {"dup", 1, sysDup},                            // 32
	unix.SYS_DUP2:              {"dup2", 2, sysDup2},                          // 33
	unix.SYS_PAUSE:             {"pause", 0, sysPause},                        // 34
	unix.SYS_NANOSLEEP:         {"nanosleep", 2, sysNanosleep},                // 35
	unix.SYS_GETITIMER:         {"getitimer", 2, sysGetitimer},                // 36
	unix.SYS_ALARM:             {"alarm", 1, sysAlarm},                        // 37
	unix.SYS_SETITIMER:         {"setitimer", 3, sysSetitimer},                // 38
	unix.SYS_GETPID:            {"getpid", 0, sysGetpid},                      // 39
	unix.SYS_SENDFILE:          {"sendfile", 4, sysSendfile},                  // 40
	unix.SYS_SOCKET:            {"socket", 3, sysSocket},                      // 41
	unix.SYS_CONNECT:           {"connect", 3, sysConnect},                    // 42
	unix.SYS_ACCEPT:            {"accept", 3, sysAccept},                      // 43
	unix.SYS_SENDTO:            {"sendto", 6, sysSendto},                      // 44
	unix.SYS_RECVFROM:          {"recvfrom", 6, sysRecvfrom},                  // 45
	unix.SYS_SENDMSG:           {"sendmsg", 3, sysSendmsg},                    // 46
	unix.SYS_RECVMSG:           {"recvmsg", 3, sysRecvmsg},                    // 47
	unix.SYS_SHUTDOWN:          {"shutdown", 2, sysShutdown},                  // 48
	unix.SYS_BIND:              {"bind", 3, sysBind},                          // 49
	unix.SYS_LISTEN:            {"listen", 2, sysListen},                      // 50
	unix.SYS_GETSOCKNAME:       {"getsockname", 3, sysGetsockname},            // 51
	unix.SYS_GETPEERNAME:       {"getpeername", 3, sysGetpeername},            // 52
	unix.SYS_SOCKETPAIR:        {"socketpair", 4, sysSocketpair},              // 53
	unix.SYS_SETSOCKOPT:        {"setsockopt", 5, sysSetsockopt},              // 54
	unix.SYS_GETSOCKOPT:        {"getsockopt", 5, sysGetsockopt},              // 55
	unix.SYS_CLONE:             {"clone", 5, sysClone},                        // 56
	unix.SYS_FORK:              {"fork", 0, sysFork},                          // 57
	unix.SYS_VFORK:             {"vfork", 0, sysVfork},                        // 58
	unix.SYS_EXECVE:            {"execve", 3, sysExecve},                      // 59
	unix.SYS_EXIT:              {"exit", 1, sysExit},                          // 60
	unix.SYS_WAIT4:             {"wait4", 4, sysWait4},                        // 61
	unix.SYS_KILL:              {"kill", 2, sysKill},                          // 62
	unix.SYS_UNAME:             {"uname", 1, sysUname},                        // 63
	unix.SYS_FCNTL:             {"fcntl", 3, sysFcntl},                        // 72
	unix.SYS_FLOCK:             {"flock", 2, sysFlock},                        // 73
	unix.SYS_FSYNC:             {"fsync", 1, fdOnly},                          // 74
	unix.SYS_FDATASYNC:         {"fdatasync", 1, fdOnly},                      // 75
	unix.SYS_TRUNCATE:          {"truncate", 2, sysTruncate},                  // 76
	unix.SYS_FTRUNCATE:         {"ftruncate", 2, sysFtruncate},                // 77
	unix.SYS_GETCWD:            {"getcwd", 2, sysGetcwd},                      // 79
	unix.SYS_CHDIR:             {"chdir", 1, sysChdir},                        // 80
	unix.SYS_FCHDIR:            {"fchdir", 1, sysFchdir},                      // 81
	unix.SYS_RENAME:            {"rename", 2, sysRename},                      // 82
	unix.SYS_MKDIR:             {"mkdir", 2, sysMkdir},                        // 83
	unix.SYS_RMDIR:             {"rmdir", 1, sysRmdir},                        // 84
	unix.SYS_CREAT:             {"creat", 2, sysCreat},                        // 85
	unix.SYS_LINK:              {"link", 2, sysLink},                          // 86
	unix.SYS_UNLINK:            {"unlink", 1, sysUnlink},                      // 87
	unix.SYS_SYMLINK:           {"symlink", 2, sysSymlink},                    // 88
	unix.SYS_READLINK:          {"readlink", 3, sysReadlink},                  // 89
	unix.SYS_CHMOD:             {"chmod", 2, sysChmod},                        // 90
	unix.SYS_FCHMOD:            {"fchmod", 2, sysFchmod},                      // 91
	unix.SYS_CHOWN:             {"chown", 3, sysChown},                        // 92
	unix.SYS_FCHOWN:            {"fchown", 3, sysFchown},                      // 93
	unix.SYS_LCHOWN:            {"lchown", 3, sysLchown},                      // 94
	unix.SYS_UMASK:             {"umask", 1, sysUmask},                        // 95
	unix.SYS_GETTIMEOFDAY:      {"gettimeofday", 2, sysGettimeofday},          // 96
	unix.SYS_GETRLIMIT:         {"getrlimit", 2, sysGetrlimit},                // 97
	unix.SYS_GETRUSAGE:         {"getrusage", 2, sysGetrusage},                // 98
	unix.SYS_SYSINFO:           {"sysinfo", 1, sysSysinfo},                    // 99
	unix.SYS_GETUID:            {"getuid", 0, getID(userIDs, false)},          // 102
	unix.SYS_GETGID:            {"getgid", 0, getID(groupIDs, false)},         // 104
	unix.SYS_SETUID:            {"setuid", 1, setID(userIDs)},                 // 105
	unix.SYS_SETGID:            {"setgid", 1, setID(groupIDs)},                // 106
	unix.SYS_GETEUID:           {"geteuid", 0, getID(userIDs, true)},          // 107
	unix.SYS_GETEGID:           {"getegid", 0, getID(groupIDs, true)},         // 108
	unix.SYS_SETPGID:           {"setpgid", 2, sysSetpgid},                    // 109
	unix.SYS_GETPPID:           {"getppid", 0, sysGetppid},                    // 110
	unix.SYS_GETPGRP:           {"getpgrp", 0, sysGetpgrp},                    // 111
	unix.SYS_SETSID:            {"setsid", 0, sysSetsid},                      // 112
	unix.SYS_SETREUID:          {"setreuid", 2, setreIDs(userIDs)},            // 113
	unix.SYS_SETREGID:          {"setregid", 2, setreIDs(groupIDs)},           // 114
	unix.SYS_GETGROUPS:         {"getgroups", 2, sysGetgroups},                // 115
	unix.SYS_SETGROUPS:         {"setgroups", 2, sysSetgroups},                // 116
	unix.SYS_SETRESUID:         {"setresuid", 3, setresIDs(userIDs)},          // 117
	unix.SYS_GETRESUID:         {"getresuid", 3, getIDs(userIDs)},             // 118
	unix.SYS_SETRESGID:         {"setresgid", 3, setresIDs(groupIDs)},         // 119
	unix.SYS_GETRESGID:         {"getresgid", 3, getIDs(groupIDs)},            // 120
	unix.SYS_GETPGID:           {"getpgid", 1, sysGetpgid},                    // 121
	unix.SYS_GETSID:            {"getsid", 1, sysGetsid},                      // 124
	unix.SYS_CAPGET:            {"capget", 2, sysCapget},                      // 125
	unix.SYS_CAPSET:            {"capset", 2, sysCapset},                      // 126
	unix.SYS_RT_SIGPENDING:     {"rt_sigpending", 2, sysRtSigpending},         // 127
	unix.SYS_RT_SIGSUSPEND:     {"rt_sigsuspend", 2, sysRtSigsuspend},         // 130
	unix.SYS_SIGALTSTACK:       {"sigaltstack", 2, sysSigaltstack},            // 131
	unix.SYS_UTIME:             {"utime", 2, sysUtime},                        // 132
	unix.SYS_STATFS:            {"statfs", 2, sysStatfs},                      // 137
	unix.SYS_FSTATFS:           {"fstatfs", 2, sysFstatfs},                    // 138
	unix.SYS_PRCTL:             {"prctl", 5, sysPrctl},                        // 157
	unix.SYS_ARCH_PRCTL:        {"arch_prctl", 2, sysArchPrctl},               // 158
	unix.SYS_GETTID:            {"gettid", 0, sysGettid},                      // 186
	unix.SYS_SETXATTR:          {"setxattr", 5, sysSetxattr},                  // 188
	unix.SYS_LSETXATTR:         {"lsetxattr", 5, sysLsetxattr},                // 189
	unix.SYS_FSETXATTR:         {"fsetxattr", 5, sysFsetxattr},                // 190
	unix.SYS_GETXATTR:          {"getxattr", 4, sysGetxattr},                  // 191
	unix.SYS_LGETXATTR:         {"lgetxattr", 4, sysLgetxattr},                // 192
	unix.SYS_FGETXATTR:         {"fgetxattr", 4, sysFgetxattr},                // 193
	unix.SYS_LISTXATTR:         {"listxattr", 3, constant(0)},                 // 194
	unix.SYS_LLISTXATTR:        {"llistxattr", 3, constant(0)},                // 195
	unix.SYS_FLISTXATTR:        {"flistxattr", 3, constant(0)},                // 196
	unix.SYS_TKILL:             {"tkill", 2, sysTkill},                        // 200
	unix.SYS_TIME:              {"time", 1, sysTime},                          // 201
	unix.SYS_FUTEX:             {"futex", 6, sysFutex},                        // 202
	unix.SYS_SCHED_SETAFFINITY: {"sched_setaffinity", 3, sysSchedSetaffinity}, // 203
	unix.SYS_SCHED_GETAFFINITY: {"sched_getaffinity", 3, sysSchedGetaffinity}, // 204
	unix.SYS_EPOLL_CREATE:      {"epoll_create", 1, sysEpollCreate},           // 213
	unix.SYS_GETDENTS64:        {"getdents64", 3, sysGetdents64},              // 217
	unix.SYS_SET_TID_ADDRESS:   {"set_tid_address", 1, sysSetTIDAddress},      // 218
	unix.SYS_FADVISE64:         {"fadvise64", 4, fdOnly},                      // 221
	unix.SYS_TIMER_CREATE:      {"timer_create", 3, sysTimerCreate},           // 222
	unix.SYS_TIMER_SETTIME:     {"timer_settime", 4, sysTimerSettime},         // 223
	unix.SYS_TIMER_GETTIME:     {"timer_gettime", 2, sysTimerGettime},         // 224
	unix.SYS_TIMER_GETOVERRUN:  {"timer_getoverrun", 1, sysTimerGetoverrun},   // 225
	unix.SYS_TIMER_DELETE:      {"timer_delete", 1, sysTimerDelete},           // 226
	unix.SYS_CLOCK_GETTIME:     {"clock_gettime", 2, sysClockGettime},         // 228
	unix.SYS_CLOCK_GETRES:      {"clock_getres", 2, sysClockGetres},           // 229
	unix.SYS_CLOCK_NANOSLEEP:   {"clock_nanosleep", 4, sysClockNanosleep},     // 230
	unix.SYS_EXIT_GROUP:        {"exit_group", 1, sysExitGroup},               // 231
	unix.SYS_EPOLL_WAIT:        {"epoll_wait", 4, sysEpollWait},               // 232
	unix.SYS_EPOLL_CTL:         {"epoll_ctl", 4, sysEpollCtl},                 // 233
	unix.SYS_TGKILL:            {"tgkill", 3, sysTgkill},                      // 234
	unix.SYS_WAITID:            {"waitid", 5, sysWaitid},                      // 247
	unix.SYS_UTIMES:            {"utimes", 2, sysUtimes},                      // 235
	unix.SYS_OPENAT:            {"openat", 4, sysOpenat},                      // 257
	unix.SYS_MKDIRAT:           {"mkdirat", 3, sysMkdirat},                    // 258
	unix.SYS_FCHOWNAT:          {"fchownat", 5, sysFchownat},                  // 260
	unix.SYS_FUTIMESAT:         {"futimesat", 3, sysFutimesat},                // 261
	unix.SYS_NEWFSTATAT:        {"newfstatat", 4, sysNewfstatat},              // 262
	unix.SYS_UNLINKAT:          {"unlinkat", 3, sysUnlinkat},                  // 263
	unix.SYS_RENAMEAT:          {"renameat", 4, sysRenameat},                  // 264
	unix.SYS_LINKAT:            {"linkat", 5, sysLinkat},                      // 265
	unix.SYS_SYMLINKAT:         {"symlinkat", 3, sysSymlinkat},                // 266
	unix.SYS_READLINKAT:        {"readlinkat", 4, sysReadlinkat},              // 267
	unix.SYS_FCHMODAT:          {"fchmodat", 3, sysFchmodat},                  // 268
	unix.SYS_FACCESSAT:         {"faccessat", 3, sysFaccessat},                // 269
	unix.SYS_PSELECT6:          {"pselect6", 6, sysPselect6},                  // 270
	unix.SYS_PPOLL:             {"ppoll", 5, sysPpoll},                        // 271
	unix.SYS_SET_ROBUST_LIST:   {"set_robust_list", 2, constant(0)},           // 273
	unix.SYS_UTIMENSAT:         {"utimensat", 4, sysUtimensat},                // 280
	unix.SYS_EPOLL_PWAIT:       {"epoll_pwait", 6, sysEpollPwait},             // 281
	unix.SYS_SIGNALFD:          {"signalfd", 3, sysSignalfd},                  // 282
	unix.SYS_TIMERFD_CREATE:    {"timerfd_create", 2, sysTimerfdCreate},       // 283
	unix.SYS_EVENTFD:           {"eventfd", 1, sysEventfd},                    // 284
	unix.SYS_FALLOCATE:         {"fallocate", 4, sysFallocate},                // 285
	unix.SYS_TIMERFD_SETTIME:   {"timerfd_settime", 4, sysTimerfdSettime},     // 286
	unix.SYS_TIMERFD_GETTIME:   {"timerfd_gettime", 2, sysTimerfdGettime},     // 287
	unix.SYS_ACCEPT4:           {"accept4", 4, sysAccept4},                    // 288
	unix.SYS_SIGNALFD4:         {"signalfd4", 4, sysSignalfd4},                // 289
	unix.SYS_EVENTFD2:          {"eventfd2", 2, sysEventfd2},                  // 290
	unix.SYS_EPOLL_CREATE1:     {"epoll_create1", 1, sysEpollCreate1},         // 291
	unix.SYS_DUP3:              {"dup3", 3, sysDup3},                          // 292
	unix.SYS_PIPE2:             {"pipe2", 2, sysPipe2},                        // 293
	unix.SYS_PRLIMIT64:         {"prlimit64", 4, sysPrlimit},                  // 302
	unix.SYS_RECVMMSG:          {"recvmmsg", 5, sysRecvmmsg},                  // 299
	unix.SYS_SENDMMSG:          {"sendmmsg", 4, sysSendmmsg},                  // 307
	unix.SYS_GETCPU:            {"getcpu", 3, sysGetcpu},                      // 309
	unix.SYS_RENAMEAT2:         {"renameat2", 5, sysRenameat},                 // 316
	unix.SYS_GETRANDOM:         {"getrandom", 3, sysGetrandom},                // 318
	unix.SYS_MEMFD_CREATE:      {"memfd_create", 2, sysMemfdCreate},           // 319
	unix.SYS_COPY_FILE_RANGE:   {"copy_file_range", 6, sysCopyFileRange},      // 326
	unix.SYS_PKEY_MPROTECT:     {"pkey_mprotect", 4, sysPkeyMprotect},         // 329
	unix.SYS_PKEY_ALLOC:        {"pkey_alloc", 2, sysPkeyAlloc},               // 330
	unix.SYS_PKEY_FREE:         {"pkey_free", 1, sysPkeyFree},                 // 331
	unix.SYS_STATX:             {"statx", 5, sysStatx},                        // 332
	unix.SYS_RSEQ:              {"rseq", 4, fallback},                         // 334: or the kernel would write the CPU number into the program
	unix.SYS_CLONE3:            {"clone3", 2, fallback},                       // 435: glibc falls back to clone
	unix.SYS_CLOSE_RANGE:       {"close_range", 3, sysCloseRange},             // 436
	unix.SYS_FACCESSAT2:        {"faccessat2", 4, sysFaccessat},               // 439
	unix.SYS_EPOLL_PWAIT2:      {"epoll_pwait2", 6, sysEpollPwait2},           // 441
}

// tableSize bounds the numbers the table has room for: past every Linux
// x86-64 call (462 in 6.10) with room to grow.
const tableSize = 512

// lookup is the table's entry for nr; ok is false for a number it lacks.
func lookup(nr uint64) (sc sysCall, ok bool) {
	if nr >= uint64(len(syscalls)) {
		return sysCall{}, false
	}
	sc = syscalls[nr]
	return sc, sc.name != ""
}

// callName names call nr: as the table does, or as Linux does.
func callName(nr uint64) string {
	if sc, ok := lookup(nr); ok {
		return sc.name
	}
	return unknownName(nr)
}
