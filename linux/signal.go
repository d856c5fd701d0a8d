package linux

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/kvm"
)

// Signals are delivered to handlers as Linux delivers them: a frame on the
// thread's stack (struct rt_sigframe: the return address of the handler's
// SA_RESTORER, a ucontext with the interrupted registers, mask and FPU
// state, a siginfo), the handler entered with (signal, &info, &uc), and
// rt_sigreturn restoring it all. They are delivered when a thread goes
// back to its program — after a system call, at a switch, after a trap —
// so a replay delivers them where the recording did.

const (
	maxSignal   = 64
	saRestorer  = 0x04000000
	saRestart   = 0x10000000
	saNodefer   = 0x40000000
	saResethand = 0x80000000
	sigDFL      = 0
	sigIGN      = 1
	siUser      = 0 // SI_USER: sent by kill
	siTkill     = -6
	saOnstack   = 0x08000000
	frameBytes  = 440 // pretcode, ucontext (304), siginfo (128)
	redZone     = 128
	// uc_flags of a frame, as Linux sets them on a CPU with XSAVE.
	ucFPXState        = 1
	ucSigcontextSS    = 2
	ucStrictRestoreSS = 4
)

// sigaction is a signal's disposition (struct kernel_sigaction).
type sigaction struct {
	handler, flags, restorer, mask uint64
}

// sigbit is a signal's bit in a mask.
func sigbit(sig uint64) uint64 { return 1 << (sig - 1) }

// unblockable signals cannot be masked or caught.
var unblockable = sigbit(uint64(unix.SIGKILL)) | sigbit(uint64(unix.SIGSTOP))

// ignoredByDefault are the signals whose default action is to do nothing.
var ignoredByDefault = sigbit(uint64(unix.SIGCHLD)) | sigbit(uint64(unix.SIGURG)) | sigbit(uint64(unix.SIGWINCH)) | sigbit(uint64(unix.SIGCONT))

// kill sends sig to the thread tid (thread), or to the process whose pid
// it is, where its first thread not blocking it takes it.
func (t *thread) kill(id int64, sig uint64, toThread bool) (uint64, error) {
	if sig > maxSignal {
		return 0, unix.EINVAL
	}
	// The threads to signal: the thread id names, or the first live
	// thread of each process it names — its own (id > 0), the caller's
	// group (0), every other process (-1), group -id.
	var targets []*thread
	taken := map[*process]bool{}
	for _, o := range t.k.threads {
		if o.state == exited || taken[o.proc] {
			continue
		}
		var named bool
		switch {
		case toThread:
			named = int64(o.tid) == id
		case id > 0:
			named = int64(o.proc.pid) == id
		case id == 0:
			named = o.proc.pgid == t.proc.pgid
		case id == -1:
			named = o.proc != t.proc
		default:
			named = int64(o.proc.pgid) == -id
		}
		if named {
			targets = append(targets, o)
			taken[o.proc] = true
		}
	}
	if len(targets) == 0 {
		return 0, unix.ESRCH
	}
	// Only those it may signal (kill_ok_by_cred): EPERM if none.
	allowed := targets[:0]
	for _, o := range targets {
		if t.proc.cred.maySignal(o.proc.cred) {
			allowed = append(allowed, o)
		}
	}
	if targets = allowed; len(targets) == 0 {
		return 0, unix.EPERM
	}
	if sig == 0 {
		return 0, nil
	}
	code := int32(siUser) // kill's; tkill and tgkill send SI_TKILL
	if toThread {
		code = siTkill
	}
	for _, target := range targets {
		if err := t.k.signal(target, sig, t.k.siginfo(sig, code, uint64(t.proc.pid))); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// siginfo is a struct siginfo for a signal sent by pid (si_pid, si_uid),
// or for a fault at an address (code: the fault's).
func (k *Kernel) siginfo(sig uint64, code int32, word uint64) [128]byte {
	var b [128]byte
	binary.LittleEndian.PutUint32(b[0:], uint32(sig))
	binary.LittleEndian.PutUint32(b[8:], uint32(code))
	binary.LittleEndian.PutUint64(b[16:], word)
	if code == siTkill || code == siUser {
		binary.LittleEndian.PutUint32(b[20:], k.current().proc.cred.uid) // the sender's real user
	}
	return b
}

// signal makes sig pending for t, or acts on it now when its disposition
// needs no handler: ignored, or ending t's process. A thread blocked in a
// call is woken to take it (the call fails with EINTR, or restarts under
// SA_RESTART).
func (k *Kernel) signal(t *thread, sig uint64, info [128]byte) error {
	act := t.proc.sigactions[sig]
	switch {
	case (act.handler == sigIGN || act.handler == sigDFL && sigbit(sig)&ignoredByDefault != 0) && t.sigmask&sigbit(sig) == 0:
		return nil // a blocked signal is never ignored: its handler may change before it is unblocked
	case act.handler == sigDFL && t.sigmask&sigbit(sig) == 0:
		return k.killProcess(t.proc, sig)
	}
	// A blocked signal stays pending, whatever its disposition: taken by a
	// signalfd, or acted on when unblocked (deliver).
	t.pending |= sigbit(sig)
	if t.infos == nil {
		t.infos = map[uint64][128]byte{}
	}
	t.infos[sig] = info
	k.signalPending()
	if t.state == blocked && t.sigmask&sigbit(sig) == 0 {
		k.interrupt(t, act.flags&saRestart != 0)
	}
	k.resched = true
	return nil
}

// sigWait is what pause and rt_sigsuspend wait on: only a signal wakes
// them, and they always return EINTR.
type sigWait struct{}

// interrupt wakes a thread blocked in a call for a signal: a call that
// restarts when woken runs again if restart says so; otherwise, and for
// waits that return their result (futex, sleeps), it fails with EINTR.
func (k *Kernel) interrupt(t *thread, restart bool) {
	if t.waitKey == (sigWait{}) {
		restart = false // pause and sigsuspend always return EINTR
	}
	restarting := t.waitKey != nil
	t.reissue = false // a SYSCALL issued after the handler is a new call
	t.stopWaiting()
	t.state, t.deadline, t.futex = runnable, 0, futexKey{}
	if restarting && restart {
		return // its RIP is on the SYSCALL: it runs again after the handler
	}
	regs := k.regsOf(t)
	if restarting {
		regs.RIP += 2 // past the SYSCALL it was to reissue
	}
	regs.RAX = negErrno(unix.EINTR)
}

// killProcess ends p by signal sig: the run itself, with a fault report
// naming it, when p is the first process.
func (k *Kernel) killProcess(p *process, sig uint64) error {
	if p.pid != pid {
		return k.exitProcess(p, sig)
	}
	c := k.m.VCPU()
	regs := *c.SyncedRegs()
	return k.m.Trap("the program was killed by "+unix.SignalName(unix.Signal(sig)), -1, regs, uint16(c.SyncedSregs().CS.Selector), 0)
}

// deliver enters the handler of the running thread's lowest pending,
// unblocked signal, with regs (the vCPU's) as the context it interrupts.
// It returns whether it did.
func (k *Kernel) deliver(regs *kvm.Regs) (bool, error) {
	t := k.current()
	ready := t.pending &^ t.sigmask
	if ready == 0 {
		return false, nil
	}
	sig := uint64(0)
	for ready&sigbit(sig+1) == 0 {
		sig++
	}
	sig++
	t.pending &^= sigbit(sig)
	act := t.proc.sigactions[sig]
	if act.handler <= sigIGN { // the disposition changed while it was pending
		if act.handler == sigDFL && sigbit(sig)&ignoredByDefault == 0 {
			return true, k.killProcess(t.proc, sig)
		}
		return false, nil
	}
	if t.inCall && k.watchesExits() {
		t.news.returned = t.callReturn(k.UserRegs(*regs))
	}
	if err := k.pushFrame(t, regs, sig, act); err != nil {
		return true, err
	}
	// The handler's calls are new ones (its rt_sigreturn first), and so
	// is a SYSCALL the context it returns to issues again: a thread woken
	// on its SYSCALL, then given a signal before it ran, still had a
	// reissue noted, which hid rt_sigreturn's entry.
	t.reissue = false
	if act.flags&saResethand != 0 {
		t.proc.sigactions[sig] = sigaction{}
	}
	return true, nil
}

// pushFrame builds the signal frame for sig below regs.RSP, or at the top
// of the thread's alternate stack when the handler asks for it, and
// points regs at the handler, as Linux's get_sigframe and
// x64_setup_rt_frame do.
func (k *Kernel) pushFrame(t *thread, regs *kvm.Regs, sig uint64, act sigaction) error {
	as := t.proc.as
	xsave, err := k.m.VCPU().XSave()
	if err != nil {
		return err
	}
	nested := t.altstack.on(regs.RSP)
	top, entering := regs.RSP-redZone, false
	if act.flags&saOnstack != 0 && t.altstack.state(top) == 0 {
		top, entering = t.altstack.sp+t.altstack.size, true
	}
	fpstate := k.xsave.frame(&xsave)
	fp := (top - uint64(len(fpstate))) &^ 63
	sp := ((fp - frameBytes) &^ 15) - 8 // the handler starts as if called: rsp+8 aligned
	if (nested || entering) && !t.altstack.holds(sp) || sp > top {
		return k.killProcess(t.proc, uint64(unix.SIGSEGV)) // the alternate stack overflowed
	}
	if err := as.Write(fp, fpstate); err != nil {
		return k.killProcess(t.proc, uint64(unix.SIGSEGV)) // no stack to take the frame
	}
	f := make([]byte, frameBytes)
	le := binary.LittleEndian
	le.PutUint64(f[0:], act.restorer) // pretcode
	uc := f[8:]
	le.PutUint64(uc[0:], ucFPXState|ucSigcontextSS|ucStrictRestoreSS)
	t.altstack.put(uc[16:])
	mc := uc[40:]
	flags := regs.RFLAGS
	if k.bp.steps(t) {
		flags &^= rflagsTF // a debugger's, as Linux's get_flags hides a forced one
	}
	for i, v := range []uint64{regs.R8, regs.R9, regs.R10, regs.R11, regs.R12, regs.R13, regs.R14, regs.R15,
		regs.RDI, regs.RSI, regs.RBP, regs.RBX, regs.RDX, regs.RAX, regs.RCX, regs.RSP, regs.RIP, flags} {
		le.PutUint64(mc[i*8:], v)
	}
	le.PutUint16(mc[144:], 0x33) // cs: a 64-bit user code segment
	le.PutUint16(mc[150:], 0x2b) // ss
	le.PutUint64(mc[184:], fp)   // fpstate
	mask := t.sigmask
	if t.suspended { // the handler returns to the mask sigsuspend replaced
		mask, t.suspended = t.savedMask, false
	}
	le.PutUint64(uc[296:], mask)
	info := t.infos[sig]
	copy(f[312:], info[:])
	if err := as.Write(sp, f); err != nil {
		return k.killProcess(t.proc, uint64(unix.SIGSEGV))
	}
	if t.altstack.flags&ssAutodisarm != 0 {
		t.altstack = altStack{}
	}
	if act.flags&saNodefer == 0 {
		t.sigmask |= sigbit(sig)
	}
	t.sigmask |= act.mask &^ unblockable
	t.entered = signalEntry{exit: k.m.Position().Exit, handler: act.handler, from: regs.RIP}
	regs.RSP, regs.RIP = sp, act.handler
	regs.RDI, regs.RSI, regs.RDX, regs.RAX = sig, sp+312, sp+8, 0
	regs.RFLAGS &^= 1 << 10 // DF clear, as the ABI wants on entry
	k.m.VCPU().MarkRegsDirty()
	return k.bp.handlerEntered(k, t, regs)
}
