// Package debugger lets gdb debug a replay of a Linux program over gdb's
// Remote Serial Protocol (package rsp): breakpoints, single steps,
// registers, memory and threads, on the replay's machine. Nothing it does
// changes what the program computes — a breakpoint is an int3 the replay
// steps over, a step the trap flag for one instruction — so a debugged
// replay ends, if continued to the end, as the recording did, checked as
// any replay.
//
// Two goroutines meet here. The machine's runs the replay; where the
// program stops for the debugger (its first instruction, a breakpoint of
// the debugger's, a step done) the kernel calls Session.Break, which hands
// the stop to the server and then runs the server's requests — reads of
// registers and memory, breakpoints set and cleared — on the machine's
// goroutine until the server resumes it. The server's goroutine speaks the
// protocol (server.go).
package debugger

import (
	"errors"
	"sync/atomic"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux"
)

// errKilled ends a replay gdb killed.
var errKilled = errors.New("debugger: the replay was killed from gdb")

// stopKind is why the program stopped for the debugger.
type stopKind int

const (
	stopStart stopKind = iota // before its first instruction
	stopBreak                 // at a breakpoint the debugger set
	stopStep                  // a single step done
)

// stop is the program stopped: the thread that stopped, its process and
// registers.
type stop struct {
	kind     stopKind
	tid, pid int
	regs     kvm.Regs
}

// resume is how the stopped program goes on: the threads to step one
// instruction (the rest run free), or ended.
type resume struct {
	step []int
	kill bool
}

// request is something the server needs done on the stopped machine, or
// (resume set) the end of the stop.
type request struct {
	do     func(b *linux.Break)
	done   chan struct{}
	resume *resume
}

// bpKey is a breakpoint of the debugger's: an address in a process.
type bpKey struct {
	pid  int
	addr uint64
}

// Session is the machine's side of a debugged replay: a linux.Breakpoints
// for replayer.Options.Debugger.
type Session struct {
	stops    chan stop
	requests chan request
	// detached: gdb left, the replay runs on to its end without stops.
	detached atomic.Bool
	// breaks are the debugger's breakpoints with their holds (gdb may
	// insert one twice); the machine's goroutine owns it.
	breaks map[bpKey]int
}

// NewSession is a session no server serves yet.
func NewSession() *Session {
	return &Session{stops: make(chan stop), requests: make(chan request), breaks: map[bpKey]int{}}
}

// Mapped places nothing: gdb sets its breakpoints itself, after it learns
// of a library from the loader's own breakpoint.
func (s *Session) Mapped(linux.Mapping, []byte) ([]uint64, error) { return nil, nil }

// Resumed is nothing to a debugger: a replay it debugs starts at boot.
func (s *Session) Resumed(*linux.Break) error { return nil }

// Break hands a stop of the debugger's to the server and serves its
// requests until it resumes the program. Another process's hit of an
// int3 on a page it shares with the debugged one, a breakpoint cleared
// since, or anything after gdb detached, goes on at once.
func (s *Session) Break(b *linux.Break) error {
	if s.detached.Load() {
		return nil
	}
	st := stop{tid: b.TID, pid: b.PID, regs: *b.Regs}
	switch {
	case b.Start:
		st.kind = stopStart
	case b.Stepped:
		st.kind = stopStep
	case b.Return || s.breaks[bpKey{b.PID, b.Regs.RIP}] == 0:
		return nil
	default:
		st.kind = stopBreak
	}
	s.stops <- st
	for r := range s.requests {
		if r.resume == nil {
			r.do(b)
			close(r.done)
			continue
		}
		if r.resume.kill {
			return errKilled
		}
		for _, tid := range r.resume.step {
			if err := b.Step(tid); err != nil {
				return err
			}
		}
		return nil
	}
	return errKilled // the server is gone
}

// setBreak and clearBreak change the debugger's breakpoints, on the
// machine's goroutine.
func (s *Session) setBreak(b *linux.Break, k bpKey) error {
	if err := b.SetBreakpoint(k.pid, k.addr); err != nil {
		return err
	}
	s.breaks[k]++
	return nil
}

func (s *Session) clearBreak(b *linux.Break, k bpKey) error {
	if s.breaks[k] == 0 {
		return nil
	}
	if s.breaks[k]--; s.breaks[k] == 0 {
		delete(s.breaks, k)
	}
	return b.ClearBreakpoint(k.pid, k.addr)
}

// clearAll removes every breakpoint of the debugger's.
func (s *Session) clearAll(b *linux.Break) error {
	var errs []error
	for k, n := range s.breaks {
		for range n {
			errs = append(errs, b.ClearBreakpoint(k.pid, k.addr))
		}
	}
	clear(s.breaks)
	return errors.Join(errs...)
}
