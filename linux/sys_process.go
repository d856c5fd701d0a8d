package linux

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

func sysExit(t *thread, a args) (uint64, error) { return 0, t.k.exitThread(a[0]) }

func sysExitGroup(t *thread, a args) (uint64, error) {
	return 0, t.k.exitProcess(t.proc, (a[0]&0xff)<<8)
}

func sysGetpid(t *thread, a args) (uint64, error) { return uint64(t.proc.pid), nil }

func sysGettid(t *thread, a args) (uint64, error) { return uint64(t.tid), nil }

func sysGetppid(t *thread, a args) (uint64, error) {
	if p := t.proc.parent; p != nil {
		return uint64(p.pid), nil
	}
	return 0, nil
}

func sysSchedYield(t *thread, a args) (uint64, error) { t.k.resched = true; return 0, nil }

func sysGetrlimit(t *thread, a args) (uint64, error) {
	return sysPrlimit(t, args{0, a[0], 0, a[1]})
}

// fallback answers ENOSYS by design, to a call the C library tries first
// and does without (rseq, clone3): it is not reported as unimplemented.
func fallback(*thread, args) (uint64, error) { return 0, unix.ENOSYS }

// constant is a system call that always returns v.
func constant(v uint64) handler { return func(*thread, args) (uint64, error) { return v, nil } }

func sysSetTIDAddress(t *thread, a args) (uint64, error) {
	t.clearTID = a[0]
	return uint64(t.tid), nil
}

const (
	archSetFS = 0x1002
	archGetFS = 0x1003
)

func sysArchPrctl(t *thread, a args) (uint64, error) {
	switch a[0] {
	case archSetFS:
		if a[1] >= maxUserAddr {
			return 0, unix.EPERM
		}
		t.fsBase = a[1]
		return 0, nil
	case archGetFS:
		return 0, memErr(t.proc.as.PutUint64(a[1], t.fsBase))
	}
	return 0, unix.EINVAL // CET and the rest: not supported, as on a CPU without them
}

// uname's fields, as a fixed, ordinary kernel: the program must see the
// same in every replay, whatever the host runs.
var utsname = [6]string{"Linux", "reprise", "6.1.0-reprise", "#1 SMP PREEMPT_DYNAMIC reprise", "x86_64", "(none)"}

func sysUname(t *thread, a args) (uint64, error) {
	var b [6 * 65]byte
	for i, f := range utsname {
		copy(b[i*65:], f)
	}
	return 0, memErr(t.proc.as.Write(a[0], b[:]))
}

// rlimits is RLIM_NLIMITS.
const rlimits = 16

// Resource limits: the stack is what the VMM maps, descriptors and
// processes are what the kernel bounds (vfs/fd.go, budget.go); the rest
// unlimited.
func sysPrlimit(t *thread, a args) (uint64, error) {
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
		if err := t.proc.as.Write(a[3], b[:]); err != nil {
			return 0, memErr(err)
		}
	}
	return 0, nil // new limits are accepted and not enforced
}

// sysSchedGetaffinity: the guest has one CPU.
func sysSchedGetaffinity(t *thread, a args) (uint64, error) {
	if a[1] < 8 || a[1]%8 != 0 {
		return 0, unix.EINVAL
	}
	return 8, memErr(t.proc.as.PutUint64(a[2], 1))
}
