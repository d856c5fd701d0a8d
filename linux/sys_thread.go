package linux

import (
	"encoding/binary"
	"errors"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/linux/vfs"

	"golang.org/x/sys/unix"
)

func sysFork(t *thread, a args) (uint64, error) { return sysClone(t, args{uint64(unix.SIGCHLD)}) }

func sysVfork(t *thread, a args) (uint64, error) { return sysClone(t, args{uint64(unix.SIGCHLD)}) }

// threadFlags are the clone flags of a thread as pthread_create makes it
// (glibc 0x3d0f00, musl 0x7d0f00 with CLONE_DETACHED): the address space,
// files, signal handlers and thread group shared.
const threadFlags = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD

// cloneKnown are the flags sysClone honours or may ignore.
const cloneKnown = threadFlags | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID |
	unix.CLONE_CHILD_CLEARTID | unix.CLONE_CHILD_SETTID | unix.CLONE_DETACHED | 0xff // the exit signal

// forkFlags are the clone flags a fork may carry (glibc's fork: 0x01200011;
// vfork, which is a fork here: the parent does not wait for the exec).
const forkFlags = unix.CLONE_CHILD_SETTID | unix.CLONE_CHILD_CLEARTID | unix.CLONE_PARENT_SETTID |
	unix.CLONE_VFORK | unix.CLONE_VM | 0xff

// sysClone creates a thread: clone(flags, stack, parent_tid, child_tid,
// tls). The child starts where the parent returns, with rax 0, on stack.
// Without CLONE_THREAD it makes a process (a fork; a vfork's shared memory
// is a copy here, which a vfork child that only execs or exits cannot
// tell).
func sysClone(t *thread, a args) (uint64, error) {
	flags, stack, parentTID, childTID, tls := a[0], a[1], a[2], a[3], a[4]
	if flags&unix.CLONE_THREAD == 0 {
		return t.forkClone(flags, stack, parentTID, childTID)
	}
	if flags&threadFlags != threadFlags {
		return 0, unix.EINVAL
	}
	if flags&^cloneKnown != 0 {
		return 0, unix.EINVAL
	}
	c := t.k.m.VCPU()
	regs := *c.SyncedRegs()
	regs.RAX = 0
	regs.RIP, regs.RFLAGS = regs.RCX, regs.R11 // after the SYSCALL, as the parent
	if stack != 0 {
		regs.RSP = stack
	}
	xsave, err := c.XSave()
	if err != nil {
		return 0, err
	}
	fs := t.fsBase
	if flags&unix.CLONE_SETTLS != 0 {
		if tls >= maxUserAddr {
			return 0, unix.EPERM
		}
		fs = tls
	}
	child, err := t.k.spawn(t.proc, regs, xsave, fs)
	if err != nil {
		return 0, err
	}
	child.sigmask = t.sigmask
	return uint64(child.tid), t.cloneTIDs(child, flags, parentTID, childTID)
}

func (t *thread) forkClone(flags, stack, parentTID, childTID uint64) (uint64, error) {
	if flags&^forkFlags != 0 {
		return 0, unix.EINVAL
	}
	child, err := t.k.fork()
	if err != nil {
		return 0, err
	}
	if stack != 0 {
		child.regs.RSP = stack
	}
	return uint64(child.tid), t.cloneTIDs(child, flags, parentTID, childTID)
}

// readStrings reads a NULL-terminated array of strings (argv, envp),
// within Linux's bounds; a NULL array is empty.
func (t *thread) readStrings(va uint64) ([]string, error) {
	var out []string
	if va == 0 {
		return nil, nil
	}
	total := 0
	for i := 0; ; i++ {
		if i >= abi.LinuxMaxArgs {
			return nil, unix.E2BIG
		}
		var b [8]byte
		if err := t.proc.as.Read(va+uint64(i)*8, b[:]); err != nil {
			return nil, memErr(err)
		}
		p := binary.LittleEndian.Uint64(b[:])
		if p == 0 {
			return out, nil
		}
		s, err := t.proc.as.ReadString(p, abi.LinuxMaxArgBytes-total)
		if err != nil {
			return nil, unix.E2BIG
		}
		total += len(s) + 1
		out = append(out, s)
	}
}

// sysExecve replaces the process's image with the executable at path,
// from the program's file system; /proc/self/exe is its own executable.
func sysExecve(t *thread, a args) (uint64, error) {
	// execfn is the name as the program gave it: a script's interpreter
	// is given it, and so is the new image (AT_EXECFN), as on Linux.
	execfn, err := t.proc.as.ReadString(a[0], unix.PathMax)
	if err != nil {
		return 0, memErr(err)
	}
	abs, err := t.resolve(atFDCWD, execfn)
	if err != nil {
		return 0, err
	}
	path := t.selfExe(abs)
	// The file first, as Linux does, then the strings, then what runs it.
	n, err := t.executableAt(path)
	if err != nil {
		return 0, err
	}
	argv, err := t.readStrings(a[1])
	if err != nil {
		return 0, err
	}
	envp, err := t.readStrings(a[2])
	if err != nil {
		return 0, err
	}
	if len(argv) == 0 {
		argv = []string{""} // as Linux since 5.18: a program may count on argv[0]
	}
	if path, n, argv, err = t.interpret(path, execfn, n, argv); err != nil {
		return 0, err
	}
	if err := abi.CheckLinuxArgs(argv, envp); err != nil {
		return 0, unix.E2BIG
	}
	p := t.proc
	for _, other := range t.k.threads {
		if other.proc == p && other != t && other.state != exited {
			other.state = exited
			other.leaveQueues()
			if err := t.k.forgetThread(other.tid); err != nil {
				return 0, err
			}
			p.live--
		}
	}
	if err := t.k.forgetThread(t.tid); err != nil { // its steps were in the image exec replaces
		return 0, err
	}
	entry, sp, err := t.k.execImage(p, vfs.Clean(path), execfn, n, argv, envp)
	switch {
	case errors.Is(err, mm.ErrNoMemory):
		return 0, unix.ENOMEM
	case err != nil:
		return 0, unix.ENOEXEC
	}
	for _, fd := range p.fds.Sorted() {
		if p.fds[fd].Cloexec {
			p.closeFD(fd)
		}
	}
	p.timers = nil
	t.fsBase, t.clearTID, t.altstack = 0, 0, altStack{}
	if err := t.k.resetXSave(); err != nil {
		return 0, err
	}
	t.k.tell(t, procNews{execed: true})
	t.call.ret = entry // it returns at the new image's entry
	regs := t.k.m.VCPU().SyncedRegs()
	*regs = kvm.Regs{RSP: sp, RFLAGS: regs.R11}
	// Exit sets RIP from RCX, as after any system call.
	regs.RCX, regs.R11 = entry, 0x202
	return 0, nil
}

// wait4 status options.
const wnohang = 1

func sysWait4(t *thread, a args) (uint64, error) {
	want := int64(int32(a[0])) // pid_t
	switch {
	case want == 0 || want < -1:
		want = -1 // process groups: all children are in the program's one group
	case a[2]&^(wnohang|unix.WUNTRACED|unix.WCONTINUED|unix.WALL|unix.WCLONE) != 0:
		return 0, unix.EINVAL
	}
	p := t.proc
	if c, ok := t.k.reap(p, want); ok {
		if a[1] != 0 {
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], uint32(c.status))
			if err := p.as.Write(a[1], b[:]); err != nil {
				return 0, memErr(err)
			}
		}
		return uint64(c.pid), nil
	}
	switch {
	case !p.hasChild(want):
		return 0, unix.ECHILD
	case a[2]&wnohang != 0:
		return 0, nil
	}
	return 0, t.blockOn(waitChild{p})
}

// cloneTIDs does what clone's TID flags ask for t's new thread child: its
// tid stored in the parent's memory and in the child's, and the word its
// exit clears.
func (t *thread) cloneTIDs(child *thread, flags, parentTID, childTID uint64) error {
	var tid [4]byte
	binary.LittleEndian.PutUint32(tid[:], uint32(child.tid))
	if flags&unix.CLONE_PARENT_SETTID != 0 {
		if err := t.proc.as.Write(parentTID, tid[:]); err != nil {
			return memErr(err)
		}
	}
	if flags&unix.CLONE_CHILD_SETTID != 0 {
		if err := child.proc.as.Write(childTID, tid[:]); err != nil {
			return memErr(err)
		}
	}
	if flags&unix.CLONE_CHILD_CLEARTID != 0 {
		child.clearTID = childTID
	}
	return nil
}

// waitid's id types and its options.
const (
	pAll    = 0
	pPID    = 1
	wExited = 4
	wNowait = 0x01000000
	cldExit = 1
	cldKill = 2
)

// sysWaitid waits for a child to exit, as wait4 does, and describes it in
// a siginfo (SIGCHLD, CLD_EXITED or CLD_KILLED, pid, status).
func sysWaitid(t *thread, a args) (uint64, error) {
	want := int64(-1)
	switch a[0] {
	case pAll:
	case pPID:
		want = int64(int32(a[1]))
	default:
		return 0, unix.EINVAL
	}
	if a[3]&wExited == 0 || a[3]&wNowait != 0 {
		return 0, unix.EINVAL // only exits are waited for, and always reaped
	}
	p := t.proc
	if c, ok := t.k.reap(p, want); ok {
		if a[2] == 0 {
			return 0, nil
		}
		info := t.k.childInfo(c)
		return 0, memErr(p.as.Write(a[2], info[:]))
	}
	switch {
	case !p.hasChild(want):
		return 0, unix.ECHILD
	case a[3]&wnohang != 0:
		if a[2] != 0 {
			return 0, memErr(p.as.Write(a[2], make([]byte, 128)))
		}
		return 0, nil
	}
	return 0, t.blockOn(waitChild{p})
}

func sysFutex(t *thread, a args) (uint64, error) {
	addr, op, val := a[0], a[1], uint32(a[2])
	if addr%4 != 0 {
		return 0, unix.EINVAL
	}
	private := op&futexPrivateFlag != 0
	key := keyOf(t.proc.as, addr, private)
	switch op & futexCmdMask {
	case futexWait:
		return t.futexWaitOn(addr, private, val, ^uint32(0), a[3], false, op&futexClockRealtime != 0)
	case futexWaitBitset:
		if a[5] == 0 {
			return 0, unix.EINVAL
		}
		return t.futexWaitOn(addr, private, val, uint32(a[5]), a[3], true, op&futexClockRealtime != 0)
	case futexWake:
		return t.k.futexWake(key, int(val), ^uint32(0)), nil
	case futexWakeBitset:
		if a[5] == 0 {
			return 0, unix.EINVAL
		}
		return t.k.futexWake(key, int(val), uint32(a[5])), nil
	case futexRequeue, futexCmpRequeue:
		if op&futexCmdMask == futexCmpRequeue {
			cur, err := t.loadUint32(addr)
			if err != nil {
				return 0, err
			}
			if cur != uint32(a[5]) {
				return 0, unix.EAGAIN
			}
		}
		woken := t.k.futexWake(key, int(val), ^uint32(0))
		moved := uint64(0)
		to := keyOf(t.proc.as, a[4], private)
		for _, w := range t.k.waiters(key) {
			if moved >= a[3] {
				break
			}
			w.futex = to
			moved++
		}
		return woken + moved, nil
	}
	return 0, unix.ENOSYS
}
