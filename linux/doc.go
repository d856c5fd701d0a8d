// Package linux is reprise's Linux personality: it runs unmodified x86-64
// Linux executables in a reprise machine by playing their kernel at the
// edge of the VMM, as gVisor's Sentry does (vmm.Kernel).
//
// The guest runs only the program's own code, at CPL3. Its SYSCALL lands
// on a stub page (LSTAR) whose OUT to abi.PortSyscall exits to the VMM;
// the system call is served here, in Go, from guest memory and the
// engine's inputs (time, randomness), and the program resumes after its
// SYSCALL. On the PVM hosts reprise is tested on, SYSCALL stays at CPL3
// and the stub exits from there (one exit, ~25 µs, where a CPL0 kernel in
// the guest is emulated instruction by instruction); on VMX hosts it runs
// at CPL0 and returns with SYSRET. Exceptions go through an IDT whose
// stubs exit to abi.PortTrap.
//
// The VMM builds and owns the page tables (package mm): every page a
// program maps is backed when it is mapped, so a running program never
// page-faults, and a fault is the program's bug, reported as a signal
// would end it.
package linux

// Version is the personality's version, kept in a tape: it changes when
// the same system calls would leave a program's memory or registers
// otherwise than before (which frames back which pages, what a call
// answers), so that a replay refuses a tape it would diverge from.
// 3: page-table frames are reused, orphans are reparented, the budget.
// 4: per-file wait queues: a thread in poll or select is woken by a
// change of the files it polls only, no longer by every pipe's change, so
// a program that polls is scheduled otherwise (fewer spurious wake-ups).
// 5: epoll, eventfd, timerfd and POSIX timers, which answered ENOSYS;
// open and stat of /proc/self/exe; chdir and fchdir into any directory;
// umask applied, chmod, fchmodat; the identity calls (setres*id, capget,
// sched_setaffinity, clock_getres, getcpu, close_range); "#!" scripts,
// EACCES for a file without execute permission (was ENOEXEC); renameat2's
// flags; statfs; hard links; fcntl record and OFD locks, flock; signalfd; a
// blocked signal stays pending whatever its disposition; kill's siginfo
// is SI_USER, SIGCHLD's carries the status.
// 6: the host's file system, read as the program looks and logged as
// file events; symbolic links; the start call, the program's first exit;
// the program starts in the recording's working directory; host files'
// owners and times in stat.
// 7: the program runs as the user who recorded it (was uid 1000);
// FIONBIO, FIOCLEX, FIONCLEX and FIONREAD on every file; the socket calls
// on a descriptor answer ENOTSOCK; pkey_alloc ENOSPC; file times; /proc's
// maps, fd, cpuinfo, meminfo; a pipe's own inode; the signal masks of
// ppoll, pselect6 and epoll_pwait; rt_sigpending; permission checks
// (every file was writable by everyone); the kernel's own files are
// root's; process groups and sessions (kill(0) signalled the first
// process).
// 8: shared mappings are shared (MAP_SHARED|MAP_ANONYMOUS was copied at
// fork; a file's shared mappings are its pages, writable), futexes in
// them keyed by frame, FUTEX_REQUEUE moves the oldest waiters first;
// memfd_create, msync, mincore, truncate, fallocate, /dev/shm; AT_EXECFN
// and a script interpreter's argument are the name execve was given; a
// directory lists in the host's order, then the program's entries in the
// order it made them (was name order); /proc/PID of any live process
// (was not found), listed in /proc; /proc/PID/stat, statm, environ; the
// user's supplementary groups (getgroups said none), setgroups;
// AF_UNIX sockets: socketpair's, and stream and seqpacket sockets bound
// to a path or an abstract name, listening, connecting and accepting;
// TCP over the loopback (AF_INET, AF_INET6 dual-stack); SCM_RIGHTS;
// SO_LINGER; FIOASYNC, F_SETOWN/F_GETOWN; F_SETLKW's EDEADLK; sendmmsg,
// recvmmsg. 9: published ports and egress through the door (a connect to
// a host address was ENETUNREACH); UDP and AF_UNIX datagrams by address
// (UDP was EAFNOSUPPORT; an unnamed AF_UNIX sender's address had 2
// bytes, now none); per-process credentials (set*id to other ids was
// EPERM even for root; kill now checks permission). 10: the stack's
// pages, and those of an anonymous mapping made with MAP_STACK or
// MAP_GROWSDOWN (a thread's stack), get frames when first touched (a
// fault, an exit, each), not all when mapped. 11: exception-less system
// calls (fastcall.go), which a tape says it used; a program without them
// runs as under 10, whose tapes this version replays (Replays). 12: a
// page's entry is marked accessed, and dirty if writable, when it is
// made, not by the CPU as the program first touches it; a fork of a
// process with at most 2048 writable private pages copies them for the
// child at once rather than share them copy-on-write (mm.Policy). 13: an
// entry that only widens the one it replaces (a page mapped where none
// was: a heap grown, a library mapped) goes in place, not in copies of
// its tables up to a new root (mm.Policy.WidenInPlace). A replay of an
// older tape runs as its recording did (Program.Personality).
const Version = 13

// Replays reports whether this personality replays a tape recorded by
// version v of it, whose calls were exception-less if fastCalls: version
// 10 had none.
func Replays(v int, fastCalls bool) bool {
	return v == Version || v == 12 || v == 11 || v == 10 && !fastCalls
}
