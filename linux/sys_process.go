package linux

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

func init() {
	register(unix.SYS_EXIT, "exit", 1, func(k *Kernel, a args) (uint64, error) { return 0, k.exitThread(a[0]) })
	register(unix.SYS_EXIT_GROUP, "exit_group", 1, func(k *Kernel, a args) (uint64, error) {
		return 0, k.exitProcess(k.proc(), (a[0]&0xff)<<8)
	})
	register(unix.SYS_GETPID, "getpid", 0, func(k *Kernel, a args) (uint64, error) { return uint64(k.proc().pid), nil })
	register(unix.SYS_GETTID, "gettid", 0, func(k *Kernel, a args) (uint64, error) { return uint64(k.current().tid), nil })
	register(unix.SYS_GETPPID, "getppid", 0, func(k *Kernel, a args) (uint64, error) {
		if p := k.proc().parent; p != nil {
			return uint64(p.pid), nil
		}
		return 0, nil
	})
	register(unix.SYS_GETUID, "getuid", 0, constant(uid))
	register(unix.SYS_GETEUID, "geteuid", 0, constant(uid))
	register(unix.SYS_GETGID, "getgid", 0, constant(gid))
	register(unix.SYS_GETEGID, "getegid", 0, constant(gid))
	register(unix.SYS_SCHED_YIELD, "sched_yield", 0, func(k *Kernel, a args) (uint64, error) { k.resched = true; return 0, nil })
	register(unix.SYS_SET_TID_ADDRESS, "set_tid_address", 1, sysSetTIDAddress)
	register(unix.SYS_SET_ROBUST_LIST, "set_robust_list", 2, constant(0))
	register(unix.SYS_RSEQ, "rseq", 4, fallback) // or the kernel would write the CPU number into the program
	register(unix.SYS_ARCH_PRCTL, "arch_prctl", 2, sysArchPrctl)
	register(unix.SYS_UNAME, "uname", 1, sysUname)
	register(unix.SYS_PRLIMIT64, "prlimit64", 4, sysPrlimit)
	register(unix.SYS_GETRLIMIT, "getrlimit", 2, func(k *Kernel, a args) (uint64, error) {
		return sysPrlimit(k, args{0, a[0], 0, a[1]})
	})
	register(unix.SYS_SCHED_GETAFFINITY, "sched_getaffinity", 3, sysSchedGetaffinity)
}

// fallback answers ENOSYS by design, to a call the C library tries first
// and does without (rseq, clone3): it is not reported as unimplemented.
func fallback(*Kernel, args) (uint64, error) { return 0, unix.ENOSYS }

// constant is a system call that always returns v.
func constant(v uint64) handler { return func(*Kernel, args) (uint64, error) { return v, nil } }

func sysSetTIDAddress(k *Kernel, a args) (uint64, error) {
	t := k.current()
	t.clearTID = a[0]
	return uint64(t.tid), nil
}

const (
	archSetFS = 0x1002
	archGetFS = 0x1003
)

func sysArchPrctl(k *Kernel, a args) (uint64, error) {
	switch a[0] {
	case archSetFS:
		if a[1] >= maxUserAddr {
			return 0, unix.EPERM
		}
		k.current().fsBase = a[1]
		return 0, nil
	case archGetFS:
		return 0, memErr(k.proc().as.putUint64(a[1], k.current().fsBase))
	}
	return 0, unix.EINVAL // CET and the rest: not supported, as on a CPU without them
}

// uname's fields, as a fixed, ordinary kernel: the program must see the
// same in every replay, whatever the host runs.
var utsname = [6]string{"Linux", "reprise", "6.1.0-reprise", "#1 SMP PREEMPT_DYNAMIC reprise", "x86_64", "(none)"}

func sysUname(k *Kernel, a args) (uint64, error) {
	var b [6 * 65]byte
	for i, f := range utsname {
		copy(b[i*65:], f)
	}
	return 0, memErr(k.proc().as.write(a[0], b[:]))
}

// rlimits is RLIM_NLIMITS.
const rlimits = 16

// Resource limits: the stack is what the VMM maps, descriptors and
// processes are what the kernel bounds (fd.go, budget.go); the rest
// unlimited.
func sysPrlimit(k *Kernel, a args) (uint64, error) {
	if a[0] != 0 && a[0] != pid {
		return 0, unix.ESRCH
	}
	if a[1] >= rlimits {
		return 0, unix.EINVAL
	}
	if a[3] != 0 {
		cur, max := ^uint64(0), ^uint64(0)
		switch a[1] {
		case unix.RLIMIT_STACK:
			cur = stackSize
		case unix.RLIMIT_NOFILE:
			cur, max = 1024, 4096
		case unix.RLIMIT_NPROC:
			cur, max = maxProcesses, maxProcesses
		}
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], cur)
		binary.LittleEndian.PutUint64(b[8:], max)
		if err := k.proc().as.write(a[3], b[:]); err != nil {
			return 0, memErr(err)
		}
	}
	return 0, nil // new limits are accepted and not enforced
}

// sysSchedGetaffinity: the guest has one CPU.
func sysSchedGetaffinity(k *Kernel, a args) (uint64, error) {
	if a[1] < 8 || a[1]%8 != 0 {
		return 0, unix.EINVAL
	}
	return 8, memErr(k.proc().as.putUint64(a[2], 1))
}
