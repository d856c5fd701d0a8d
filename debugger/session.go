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
	"bytes"
	"errors"
	"fmt"
	"slices"
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
	stopWatch                 // a write to watched memory done
)

// stop is the program stopped: the thread that stopped, its process and
// registers, and for stopWatch the watch's address.
type stop struct {
	kind     stopKind
	tid, pid int
	regs     kvm.Regs
	watch    uint64
}

// resume is how the stopped program goes on: the threads to step one
// instruction (the rest run free), or ended. With watch, every thread
// steps, watched memory checked after each instruction.
type resume struct {
	step  []int
	watch bool
	kill  bool
}

// watch is watched memory (gdb's write watchpoints): a range of a
// process, and what it held after the last instruction checked.
type watch struct {
	pid  int
	addr uint64
	old  []byte
}

// Bounds on watches, which the client sets: each is compared after
// every instruction the program runs.
const (
	maxWatches   = 64
	maxWatchSize = 4096
)

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
	// The machine's goroutine owns the rest. breaks are the debugger's
	// breakpoints with their holds (gdb may insert one twice); watches
	// its watched memory, watching whether the program steps to check
	// it; stepFor the threads whose next step stops the program.
	breaks   map[bpKey]int
	watches  []watch
	watching bool
	stepFor  map[int]bool
}

// NewSession is a session no server serves yet.
func NewSession() *Session {
	return &Session{stops: make(chan stop), requests: make(chan request), breaks: map[bpKey]int{}, stepFor: map[int]bool{}}
}

// Mapped places nothing: gdb sets its breakpoints itself, after it learns
// of a library from the loader's own breakpoint.
func (s *Session) Mapped(linux.Mapping, []byte) ([]uint64, error) { return nil, nil }

// Resumed is nothing to a debugger: a replay it debugs starts at boot.
func (s *Session) Resumed(*linux.Break) error { return nil }

// Break hands a stop of the debugger's to the server and serves its
// requests until it resumes the program. Another process's hit of an
// int3 on a page it shares with the debugged one, a breakpoint cleared
// since, a step that only checked watched memory, or anything after gdb
// detached, goes on at once.
func (s *Session) Break(b *linux.Break) error {
	if s.detached.Load() {
		return nil
	}
	st := stop{tid: b.TID, pid: b.PID, regs: *b.Regs}
	switch {
	case b.Start:
		st.kind = stopStart
	case b.Stepped:
		asked := s.stepFor[b.TID]
		delete(s.stepFor, b.TID)
		switch w := s.written(b); {
		case w != nil:
			st.kind, st.watch = stopWatch, w.addr
		case asked:
			st.kind = stopStep
		case s.watching:
			return s.stepAll(b)
		default:
			return nil // a step the server no longer wants
		}
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
		return s.resume(b, *r.resume)
	}
	return errKilled // the server is gone
}

// resume sets the program going as r says.
func (s *Session) resume(b *linux.Break, r resume) error {
	if r.kill {
		return errKilled
	}
	for _, tid := range r.step {
		if err := b.Step(tid); err != nil {
			return err
		}
		s.stepFor[tid] = true
	}
	s.watching = r.watch && len(s.watches) > 0
	if s.watching {
		return s.stepAll(b)
	}
	return nil
}

// stepAll has every live thread step, so that watched memory is checked
// after each instruction whichever thread runs (new threads included:
// each step arms the ones made since).
func (s *Session) stepAll(b *linux.Break) error {
	for _, t := range b.Threads() {
		if err := b.Step(t.TID); err != nil {
			return err
		}
	}
	return nil
}

// written is the first watch whose memory changed since it was last
// checked, nil if none; every watch's memory is read again. Memory gone
// (unmapped, its process ended) reads as unchanged.
func (s *Session) written(b *linux.Break) *watch {
	var hit *watch
	for i := range s.watches {
		w := &s.watches[i]
		now := make([]byte, len(w.old))
		if b.ReadMemory(w.pid, w.addr, now) != nil {
			continue
		}
		if !bytes.Equal(now, w.old) {
			w.old = now
			if hit == nil {
				hit = w
			}
		}
	}
	return hit
}

// setWatch and clearWatch change the watched memory, on the machine's
// goroutine.
func (s *Session) setWatch(b *linux.Break, pid int, addr uint64, size int) error {
	if len(s.watches) >= maxWatches || size <= 0 || size > maxWatchSize {
		return fmt.Errorf("debugger: at most %d watches of at most %d bytes", maxWatches, maxWatchSize)
	}
	old := make([]byte, size)
	if err := b.ReadMemory(pid, addr, old); err != nil {
		return err
	}
	s.watches = append(s.watches, watch{pid: pid, addr: addr, old: old})
	return nil
}

func (s *Session) clearWatch(pid int, addr uint64, size int) {
	for i, w := range s.watches {
		if w.pid == pid && w.addr == addr && len(w.old) == size {
			s.watches = slices.Delete(s.watches, i, i+1)
			return
		}
	}
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
