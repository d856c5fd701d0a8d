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
// signal's handler) returns from nothing it is told of, nor does an exit.
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
