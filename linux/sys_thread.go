package linux

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

func init() {
	register(unix.SYS_CLONE, "clone", sysClone)
	register(unix.SYS_CLONE3, "clone3", nil) // glibc falls back to clone
	register(unix.SYS_TGKILL, "tgkill", sysTgkill)
	register(unix.SYS_TKILL, "tkill", func(k *Kernel, a args) (uint64, error) { return sysTgkill(k, args{pid, a[0], a[1]}) })
	register(unix.SYS_KILL, "kill", func(k *Kernel, a args) (uint64, error) { return sysTgkill(k, args{a[0], a[0], a[1]}) })
}

// threadFlags are the clone flags of a thread as pthread_create makes it
// (glibc 0x3d0f00, musl 0x7d0f00 with CLONE_DETACHED): the address space,
// files, signal handlers and thread group shared.
const threadFlags = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD

// cloneKnown are the flags sysClone honours or may ignore.
const cloneKnown = threadFlags | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID |
	unix.CLONE_CHILD_CLEARTID | unix.CLONE_CHILD_SETTID | unix.CLONE_DETACHED | 0xff // the exit signal

// sysClone creates a thread: clone(flags, stack, parent_tid, child_tid,
// tls). The child starts where the parent returns, with rax 0, on stack.
// Processes (clone without CLONE_VM, fork) are not implemented yet.
func sysClone(k *Kernel, a args) (uint64, error) {
	flags, stack, parentTID, childTID, tls := a[0], a[1], a[2], a[3], a[4]
	if flags&threadFlags != threadFlags {
		return 0, unix.ENOSYS
	}
	if flags&^cloneKnown != 0 {
		return 0, unix.EINVAL
	}
	c := k.m.VCPU()
	regs := *c.SyncedRegs()
	regs.RAX = 0
	regs.RIP, regs.RFLAGS = regs.RCX, regs.R11 // after the SYSCALL, as the parent
	if stack != 0 {
		regs.RSP = stack
	}
	fpu, err := c.FPU()
	if err != nil {
		return 0, err
	}
	fs := k.current().fsBase
	if flags&unix.CLONE_SETTLS != 0 {
		if tls >= maxUserAddr {
			return 0, unix.EPERM
		}
		fs = tls
	}
	t, err := k.spawn(regs, fpu, fs)
	if err != nil {
		return 0, err
	}
	var tid [4]byte
	binary.LittleEndian.PutUint32(tid[:], uint32(t.tid))
	if flags&unix.CLONE_PARENT_SETTID != 0 {
		if err := k.as.write(parentTID, tid[:]); err != nil {
			return 0, memErr(err)
		}
	}
	if flags&unix.CLONE_CHILD_SETTID != 0 {
		if err := k.as.write(childTID, tid[:]); err != nil {
			return 0, memErr(err)
		}
	}
	if flags&unix.CLONE_CHILD_CLEARTID != 0 {
		t.clearTID = childTID
	}
	return uint64(t.tid), nil
}

// fatalSignals end the program when sent and not handled (no handler runs
// yet): it ends as a fault naming the signal.
var fatalSignals = map[uint64]string{
	uint64(unix.SIGHUP): "SIGHUP", uint64(unix.SIGINT): "SIGINT", uint64(unix.SIGQUIT): "SIGQUIT",
	uint64(unix.SIGILL): "SIGILL", uint64(unix.SIGABRT): "SIGABRT", uint64(unix.SIGBUS): "SIGBUS",
	uint64(unix.SIGFPE): "SIGFPE", uint64(unix.SIGKILL): "SIGKILL", uint64(unix.SIGSEGV): "SIGSEGV",
	uint64(unix.SIGPIPE): "SIGPIPE", uint64(unix.SIGALRM): "SIGALRM", uint64(unix.SIGTERM): "SIGTERM",
}

// sysTgkill: a signal a program sends itself (abort's SIGABRT). Signal 0
// probes; a fatal one ends the run with a fault report; others are
// dropped, as no handler runs yet.
func sysTgkill(k *Kernel, a args) (uint64, error) {
	if a[0] != pid {
		return 0, unix.ESRCH
	}
	if a[2] > 64 {
		return 0, unix.EINVAL
	}
	name, fatal := fatalSignals[a[2]]
	if !fatal {
		return 0, nil
	}
	c := k.m.VCPU()
	regs := *c.SyncedRegs()
	regs.RIP = regs.RCX
	return 0, k.m.Trap("the program was killed by "+name+" (it sent it itself)", -1, regs, uint16(c.SyncedSregs().CS.Selector), 0)
}
