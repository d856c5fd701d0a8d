package debugger

import (
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/rsp"
)

// Syscall stops (gdb's catch syscall, QCatchSyscalls) for a Linux
// program: the program stops where a thread makes a system call gdb
// catches, before the kernel serves it (its entry: RIP after the SYSCALL,
// RAX -ENOSYS, orig_rax the call), and where the thread runs again right
// after it (its return: RAX the result) — as Linux's syscall-entry and
// syscall-exit stops, which gdbserver reports. A thread gdb steps is not
// stopped by the calls it passes (a step from an entry ends at the
// return), as under ptrace. A reverse-continue finds the last entry or
// return before where the program is as it finds breakpoints' hits: a
// replay records them (callHit), and goes back to the last — an entry by
// replaying to its exit (the Entering callback there), a return by its
// place, the first instruction after the call; a return at the exit
// where a signal's handler is entered next (Linux's syscall-exit stop
// before the signal's delivery) by replaying to that exit too.

// callStop is a syscall stop: the call's number, and whether it is the
// call's entry (else its return), or its return before a signal's
// handler (at the exit, as an entry is: the thread runs the handler
// next, not the instruction after the call).
type callStop struct {
	nr            uint64
	entry         bool
	beforeHandler bool
}

// syscallCatch is what gdb catches: every call, or those numbered.
type syscallCatch struct {
	all bool
	nrs map[uint64]bool
}

// newCatch is what c asks to catch, nil for nothing.
func newCatch(c rsp.CatchSyscalls) *syscallCatch {
	if !c.Enable {
		return nil
	}
	sc := &syscallCatch{all: len(c.Calls) == 0, nrs: map[uint64]bool{}}
	for _, nr := range c.Calls {
		sc.nrs[nr] = true
	}
	return sc
}

// catches reports whether c catches call nr.
func (c *syscallCatch) catches(nr uint64) bool { return c != nil && (c.all || c.nrs[nr]) }

// Entering serves a Linux program's system call as a thread makes it
// (linux.ExitWatcher).
func (s *Session) Entering(b *linux.Break) error { return s.entering(linuxTrap(b)) }

// entering is b's thread making a system call: a stop if gdb catches it,
// a seek's goal or hit.
func (s *Session) entering(b *Trap) error {
	return s.callAtExit(b, callStop{nr: b.Syscall, entry: true})
}

// returnBeforeHandler is b's thread returning from a system call at the
// exit where it enters a signal's handler: a stop if gdb catches the
// call, a seek's goal or hit — found again at that exit, as an entry is.
func (s *Session) returnBeforeHandler(b *Trap) error {
	return s.callAtExit(b, callStop{nr: b.Syscall, beforeHandler: true})
}

// callAtExit is a syscall stop of b's thread that is found at its exit,
// not at an instruction (an entry, a return before a handler): a stop if
// gdb catches the call, a seek's goal or hit.
func (s *Session) callAtExit(b *Trap, call callStop) error {
	if s.detached.Load() {
		return nil
	}
	here := Mark{Exit: b.Position().Exit, TID: b.TID, PID: b.PID, Image: b.Image, Call: &call}
	if sk := s.seek; sk != nil {
		if g := sk.goal; !sk.window && sk.at == nil && g.atExit() && g.entry() == call.entry && g.Exit == here.Exit && g.TID == here.TID {
			if ws := sk.watch; call.entry && ws != nil && !ws.step {
				s.entryScan(b, ws)
			}
			return s.arrived(b, here)
		}
		s.callHit(b, sk, here)
		return nil
	}
	if !s.callStops(b) {
		return nil
	}
	return s.stopAt(b, stop{kind: stopSyscall, tid: b.TID, pid: b.PID, regs: *b.Regs, call: call}, here)
}

// callStops reports whether b's system call, at its entry or return,
// stops the program for gdb: one it catches, in a process it follows, in
// a thread it does not step — while gdb is there (it may detach at a
// fork's stop, right before the fork's return).
func (s *Session) callStops(b *Trap) bool {
	_, stepping := s.stepFor[b.TID]
	return s.catch.catches(b.Syscall) && s.following(b.PID) && !stepping && !s.detached.Load()
}

// callHit records, for a seek scanning for system calls, b's entry or
// return at here if it is before the seek's goal.
func (s *Session) callHit(b *Trap, sk *seeker, here Mark) {
	if !sk.calls.catches(b.Syscall) || !s.following(b.PID) {
		return
	}
	if !sk.window && (here.Exit > sk.goal.Exit || here.same(sk.goal)) {
		return
	}
	if here.Call == nil {
		here.Call = &callStop{nr: b.Syscall}
	}
	sk.hit(b, here)
}

// catchSyscalls sets what gdb catches.
func (s *server) catchSyscalls(c rsp.CatchSyscalls) []byte {
	if s.kit {
		return nil // a kit guest's calls are its kernel's own: not served
	}
	s.on(func(*Trap) { s.session.catch = newCatch(c) })
	return rsp.OK()
}
