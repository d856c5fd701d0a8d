package linux

import (
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/kvm"
)

// A debugger's syscall stops (gdb's catch syscall), as Linux's
// syscall-entry and syscall-exit stops under ptrace: an ExitWatcher is
// told of each system call as a thread makes it, before the kernel serves
// it (Entering), and, on the exit's Break of the thread that runs next, of
// the call it returns from (Break.Returned). A call that blocked and is
// issued again when the thread wakes is the same call, told once; one a
// signal's handler interrupted and SA_RESTART issues again is a new one,
// as under Linux. An execve that succeeds returns at the new image's
// entry; an rt_sigreturn where the context it restores resumes, as a
// call numbered -1 (Linux's restore sets orig_rax to -1: gdb catches it
// only when it catches every call). A thread that resumes elsewhere (in a
// signal's handler) returns from the call first, as under Linux: with
// its result, or, if the signal interrupted it, with the code Linux's
// syscall-exit stop shows (-ERESTARTSYS and its kin, which the handler's
// set-up turns into -EINTR or a restart). An exit returns nowhere.
// The kernel keeps which call each thread is in whether or not a
// debugger watches, in its checkpoints too, so that a replay from any of
// them tells the same stops.

// syscallAt is a system call a thread made: its number and the address it
// returns to, the instruction after its SYSCALL.
type syscallAt struct{ nr, ret uint64 }

// enterCall notes that thread t, the running one, makes the system call
// regs (the vCPU's, in the SYSCALL stub) hold, and tells an ExitWatcher
// of it unless it is a blocked call issued again. A step the watcher asks
// of the thread there ends where the call returns, as a step over its
// SYSCALL does.
func (k *Kernel) enterCall(t *thread, regs *kvm.Regs) error {
	again := t.reissue
	t.call, t.inCall, t.reissue = syscallAt{nr: regs.RAX, ret: regs.RCX}, true, false
	if again || k.bp == nil || k.bp.exits == nil {
		return nil
	}
	// The registers Linux shows at a syscall-entry stop: the program's,
	// RAX -ENOSYS (the call's number is in orig_rax).
	user := k.UserRegs(*regs)
	user.RFLAGS, user.RAX = regs.R11, negErrno(unix.ENOSYS)
	b := &Break{TID: t.tid, PID: t.proc.pid, Image: t.proc.execs, Regs: &user, Syscall: t.call.nr, k: k, proc: t.proc}
	if err := k.bp.exits.Entering(b); err != nil {
		return err
	}
	if _, armed := k.bp.afterSyscall[t.tid]; !k.bp.stepping[t.tid] || armed {
		return nil
	}
	_, err := k.armStep(t, t.call.ret-2)
	return err
}

// leaveCall notes that thread t runs again, at rip, after a system call it
// was in, if it was: it returned from the call if it runs right after the
// call's SYSCALL.
func (t *thread) leaveCall(rip uint64) (returned bool) {
	if !t.inCall {
		return false
	}
	t.inCall = false
	return rip == t.call.ret
}

// origRAX is what Linux shows as thread t's orig_rax: the number of the
// system call it is in, -1 if none. (At a return it is the call's too:
// the debugger, which knows it stopped there, says so.)
func (t *thread) origRAX() uint64 {
	if t.inCall {
		return t.call.nr
	}
	return ^uint64(0)
}

// callReturn is what thread t, in a system call and about to enter a
// signal's handler with regs (the program's), shows at the call's
// syscall-exit stop, nil if regs are not at its return: there, with the
// call's result, or EINTR for an interrupted call (interrupt) that
// Linux shows as the code it had before the handler's set-up; on its
// SYSCALL, to issue it again after the handler, the same code at the
// return.
func (t *thread) callReturn(regs kvm.Regs) *kvm.Regs {
	switch regs.RIP {
	case t.call.ret:
		if regs.RAX != negErrno(unix.EINTR) {
			return &regs
		}
	case t.call.ret - 2:
		regs.RIP = t.call.ret
	default:
		return nil
	}
	regs.RAX = negErrno(interruptedCode(t.call.nr, regs))
	return &regs
}

// The codes a call a signal interrupted returns inside Linux (never to
// a program: a handler's set-up or the return to it makes them EINTR or
// a restart): a call that restarts under SA_RESTART; one that never
// restarts with a handler (waits only a signal ends, waits with a mask);
// a sleep that resumes with what was left.
const (
	errRestartSys          unix.Errno = 512
	errRestartNoHand       unix.Errno = 514
	errRestartRestartBlock unix.Errno = 516
)

// interruptedCode is the code Linux's syscall-exit stop shows for call nr,
// with registers regs, when a signal interrupted it.
func interruptedCode(nr uint64, regs kvm.Regs) unix.Errno {
	switch nr {
	case unix.SYS_PAUSE, unix.SYS_RT_SIGSUSPEND, unix.SYS_SELECT, unix.SYS_PSELECT6, unix.SYS_PPOLL:
		return errRestartNoHand
	case unix.SYS_POLL:
		if int32(regs.RDX) < 0 { // no timeout
			return errRestartNoHand
		}
		return errRestartRestartBlock
	case unix.SYS_NANOSLEEP:
		return errRestartRestartBlock
	case unix.SYS_CLOCK_NANOSLEEP:
		if regs.RSI&unix.TIMER_ABSTIME != 0 {
			return errRestartNoHand
		}
		return errRestartRestartBlock
	case unix.SYS_FUTEX:
		if regs.R10 != 0 { // a timeout: it resumes with what is left
			return errRestartRestartBlock
		}
	case unix.SYS_EPOLL_WAIT, unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2, unix.SYS_RT_SIGTIMEDWAIT:
		return unix.EINTR
	}
	return errRestartSys
}
