package linux

// The signal calls: actions, masks, sending, waiting, returning from a
// handler. Delivery and frames are signal.go's.

import (
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/kvm"
)

func sysPause(t *thread, a args) (uint64, error) { return 0, t.blockOn(sigWait{}) }

func sysTgkill(t *thread, a args) (uint64, error) { return t.kill(int64(int32(a[1])), a[2], true) }

func sysTkill(t *thread, a args) (uint64, error) { return t.kill(int64(int32(a[0])), a[1], true) }

func sysKill(t *thread, a args) (uint64, error) { return t.kill(int64(int32(a[0])), a[1], false) }

func sysRtSigaction(t *thread, a args) (uint64, error) {
	sig := a[0]
	if sig == 0 || sig > maxSignal || a[3] != 8 {
		return 0, unix.EINVAL
	}
	p := t.proc
	if a[2] != 0 {
		old := p.sigactions[sig]
		var b [32]byte
		for i, v := range []uint64{old.handler, old.flags, old.restorer, old.mask} {
			binary.LittleEndian.PutUint64(b[i*8:], v)
		}
		if err := p.as.Write(a[2], b[:]); err != nil {
			return 0, memErr(err)
		}
	}
	if a[1] != 0 {
		if sigbit(sig)&unblockable != 0 {
			return 0, unix.EINVAL
		}
		var b [32]byte
		if err := p.as.Read(a[1], b[:]); err != nil {
			return 0, memErr(err)
		}
		le := binary.LittleEndian
		act := sigaction{handler: le.Uint64(b[:]), flags: le.Uint64(b[8:]), restorer: le.Uint64(b[16:]), mask: le.Uint64(b[24:])}
		if act.handler > sigIGN && act.flags&saRestorer == 0 {
			return 0, unix.EINVAL // x86-64 handlers return through their restorer
		}
		p.sigactions[sig] = act
	}
	return 0, nil
}

func sysRtSigprocmask(t *thread, a args) (uint64, error) {
	if a[3] != 8 {
		return 0, unix.EINVAL
	}
	if a[2] != 0 {
		if err := t.proc.as.PutUint64(a[2], t.sigmask); err != nil {
			return 0, memErr(err)
		}
	}
	if a[1] == 0 {
		return 0, nil
	}
	var b [8]byte
	if err := t.proc.as.Read(a[1], b[:]); err != nil {
		return 0, memErr(err)
	}
	set := binary.LittleEndian.Uint64(b[:]) &^ unblockable
	switch a[0] {
	case unix.SIG_BLOCK:
		t.sigmask |= set
	case unix.SIG_UNBLOCK:
		t.sigmask &^= set
	case unix.SIG_SETMASK:
		t.sigmask = set
	default:
		return 0, unix.EINVAL
	}
	return 0, nil
}

// sysRtSigpending reports the signals pending for the thread that it
// blocks (an unblocked one would have been delivered).
func sysRtSigpending(t *thread, a args) (uint64, error) {
	if a[1] > 8 {
		return 0, unix.EINVAL
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], t.pending&t.sigmask)
	return 0, memErr(t.proc.as.Write(a[0], b[:a[1]]))
}

// withSigmask runs call, a wait given a signal mask at va (ppoll,
// pselect6, epoll_pwait and epoll_pwait2; 0 for none) of size bytes, with
// that mask held for the wait, as Linux's set_user_sigmask does: a signal
// it lets through ends the wait with EINTR and its handler returns to the
// thread's own mask (the frame saves that one, as for sigsuspend); a call
// that ends otherwise puts the thread's mask back at once, leaving such a
// signal pending. A reissued wait (woken by a file) has the mask already.
func (t *thread) withSigmask(va, size uint64, call func() (uint64, error)) (uint64, error) {
	if va == 0 {
		return call()
	}
	if !t.suspended {
		if size != 8 {
			return 0, unix.EINVAL
		}
		var b [8]byte
		if err := t.proc.as.Read(va, b[:]); err != nil {
			return 0, memErr(err)
		}
		t.savedMask, t.suspended = t.sigmask, true
		t.sigmask = binary.LittleEndian.Uint64(b[:]) &^ unblockable
	}
	ret, err := call()
	switch {
	case errors.Is(err, errRestart) && t.pending&^t.sigmask != 0:
		// It would wait with a signal it lets through pending already:
		// the handler runs now.
		t.stopWaiting()
		t.state = runnable
		return 0, unix.EINTR
	case errors.Is(err, errRestart), errors.Is(err, unix.EINTR):
		return ret, err
	}
	t.sigmask, t.suspended = t.savedMask, false
	return ret, err
}

// sysRtSigsuspend waits for a signal with the mask set given, the
// thread's own mask coming back when the handler returns.
func sysRtSigsuspend(t *thread, a args) (uint64, error) {
	if a[1] != 8 {
		return 0, unix.EINVAL
	}
	var b [8]byte
	if err := t.proc.as.Read(a[0], b[:]); err != nil {
		return 0, memErr(err)
	}
	if t.waitKey == nil { // not reissued after a wake that was no signal
		t.savedMask, t.suspended = t.sigmask, true
		t.sigmask = binary.LittleEndian.Uint64(b[:]) &^ unblockable
	}
	if t.pending&^t.sigmask != 0 {
		// A signal the new mask lets through is pending already (a child
		// that exited while SIGCHLD was blocked): its handler runs now.
		t.waitKey = nil
		return 0, unix.EINTR
	}
	return 0, t.blockOn(sigWait{})
}

// sysRtSigreturn restores the context the handler's frame saved (the
// handler returned through its restorer: the frame's ucontext is at rsp):
// registers, signal mask, extended state and alternate stack. A frame it
// cannot read or restore kills the process with SIGSEGV, as Linux's
// badframe path does.
func sysRtSigreturn(t *thread, a args) (uint64, error) {
	c := t.k.m.VCPU()
	regs := c.SyncedRegs()
	bad := func() (uint64, error) { return 0, t.k.killProcess(t.proc, uint64(unix.SIGSEGV)) }
	uc := make([]byte, 304)
	if err := t.proc.as.Read(regs.RSP, uc); err != nil {
		return bad()
	}
	le := binary.LittleEndian
	mc := uc[40:]
	get := func(i int) uint64 { return le.Uint64(mc[i*8:]) }
	saved := kvm.Regs{R8: get(0), R9: get(1), R10: get(2), R11: get(3), R12: get(4), R13: get(5), R14: get(6), R15: get(7),
		RDI: get(8), RSI: get(9), RBP: get(10), RBX: get(11), RDX: get(12), RAX: get(13), RCX: get(14), RSP: get(15), RIP: get(16)}
	// The program's own flags only: no IOPL, no VM, interrupts on.
	const userFlags = 0xcd5 | 1<<10 | 1<<18 | 1<<21 // CF PF AF ZF SF TF DF OF, AC, ID
	saved.RFLAGS = get(17)&userFlags | 1<<9 | 1<<1
	xsave := t.k.xsave.initial() // no fpstate: the initial state, as Linux
	if fp := le.Uint64(mc[184:]); fp != 0 {
		legacy := make([]byte, legacyBytes)
		if err := t.proc.as.Read(fp, legacy); err != nil {
			return bad()
		}
		b := make([]byte, t.k.xsave.frameSize(legacy))
		if err := t.proc.as.Read(fp, b); err != nil {
			return bad()
		}
		var ok bool
		if xsave, ok = t.k.xsave.fromFrame(b); !ok {
			return bad()
		}
	}
	if err := c.SetXSave(&xsave); err != nil {
		return 0, err
	}
	t.sigmask = le.Uint64(uc[296:]) &^ unblockable
	_ = t.altstack.set(altStackOf(uc[16:]), saved.RSP) // what it refuses is ignored, as Linux's restore_altstack does
	*regs = saved
	c.MarkRegsDirty()
	t.k.returned = true // the registers are the restored context's: Exit leaves them
	// Its return is where the context resumes, as a call numbered -1:
	// Linux's restore sets orig_rax to -1, which its syscall-exit stop
	// shows.
	t.call = syscallAt{nr: ^uint64(0), ret: saved.RIP}
	return 0, nil
}

// sysSigaltstack is sigaltstack(ss, old_ss): the old stack as it was,
// the new one set.
func sysSigaltstack(t *thread, a args) (uint64, error) {
	sp := t.k.m.VCPU().SyncedRegs().RSP
	var b [stackTBytes]byte
	old := t.altstack
	if a[0] != 0 {
		if err := t.proc.as.Read(a[0], b[:]); err != nil {
			return 0, memErr(err)
		}
		if err := t.altstack.set(altStackOf(b[:]), sp); err != nil {
			return 0, err
		}
	}
	if a[1] != 0 {
		old.report(b[:], sp)
		if err := t.proc.as.Write(a[1], b[:]); err != nil {
			return 0, memErr(err)
		}
	}
	return 0, nil
}
