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
// the stop, a Trap, to the server and then runs the server's requests —
// reads of registers and memory, breakpoints set and cleared, through the
// Trap's Program (program.go) — on the machine's goroutine until the
// server resumes it. The server's goroutine speaks the protocol
// (server.go).
package debugger

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/rsp"
)

// errKilled ends a replay gdb killed.
var errKilled = errors.New("debugger: the replay was killed from gdb")

// errAbandoned ends a replay whose search gdb's interrupt gave up
// (seeker.interruptible).
var errAbandoned = errors.New("debugger: gdb interrupted the search")

// stopKind is why the program stopped for the debugger.
type stopKind int

const (
	stopStart     stopKind = iota // before its first instruction
	stopBreak                     // at a breakpoint the debugger set
	stopStep                      // a single step done
	stopWatch                     // a write to watched memory done
	stopInterrupt                 // gdb's interrupt, at an exit
	stopSeek                      // a seek's exit reached (monitor seek)
	stopFork                      // back from a fork: a process to follow
	stopExec                      // back from an exec, in the new image
	stopEnd                       // a followed process ended
	stopSyscall                   // a system call's entry or return gdb catches
)

// stop is the program stopped: the thread that stopped, its process and
// registers, for stopWatch the watch's address and kind, for stopFork the
// child's process, for stopExec the executable's path, for stopEnd the
// end, for stopSyscall the call.
type stop struct {
	kind      stopKind
	tid, pid  int
	regs      kvm.Regs
	watch     uint64
	watchKind rsp.BreakKind
	child     int
	exe       string
	ended     ProcessEnd
	call      callStop
}

// resume is how the stopped program goes on: the threads to step one
// instruction, each on while it stays in its range (gdb's range stepping,
// vCont;r; an empty range: one instruction) — the rest run free — or
// ended. With watch, every thread steps, watched memory checked after
// each instruction.
type resume struct {
	step  map[int]addrRange
	watch bool
	kill  bool
}

// addrRange is [start, end) of addresses.
type addrRange struct{ start, end uint64 }

func (r addrRange) holds(a uint64) bool { return a >= r.start && a < r.end }

// watch is watched memory (gdb's watchpoints): a range of a process,
// what it held after the last instruction checked, and whether a write
// to it, a read or any access stops the program (rsp.WatchWrite,
// WatchRead, WatchAccess).
type watch struct {
	pid  int
	addr uint64
	old  []byte
	kind rsp.BreakKind
}

// Bounds on what the client sets: watches (each compared after every
// instruction the program runs) and breakpoints (each an int3 and the
// session's and kernel's bookkeeping; gdb sets a few dozen).
const (
	maxWatches     = 64
	maxWatchSize   = 4096
	maxBreakpoints = 4096
)

// request is something the server needs done on the stopped machine, or
// (resume set) the end of the stop.
type request struct {
	do     func(b *Trap)
	done   chan struct{}
	resume *resume
}

// bpKey is a breakpoint of the debugger's: an address in one image of a
// process (gdb's go with the image an exec replaces, as under Linux).
type bpKey struct {
	pid   int
	image uint64
	addr  uint64
}

// keyAt is where a breakpoint at addr in b's process and image is.
func keyAt(b *Trap, addr uint64) bpKey { return bpKey{b.PID, b.Image, addr} }

// Session is the machine's side of a debugged replay: a linux.Breakpoints
// for replayer.Options.Debugger. One session serves every replay of a
// debugging session: reverse execution replays again, finding a mark.
type Session struct {
	stops    chan stop
	requests chan request
	// detached: gdb left, the replay runs on to its end without stops;
	// interrupt: gdb asked to stop the running program (0x03), which
	// stops at its next exit.
	detached  atomic.Bool
	interrupt atomic.Bool
	// The machine's goroutine owns the rest (the server changes it only
	// between replays). user are gdb's breakpoints with their holds (gdb
	// may insert one twice), placed the int3s the current replay's
	// kernel holds for the session; watches its watched memory, watching
	// whether the program steps to check it; stepFor the threads whose
	// next step stops the program, unless it lands in the thread's range.
	user     map[bpKey]int
	placed   map[bpKey]int
	watches  []watch
	watching bool
	// touching are, while read or access watches are set, the memory each
	// stepping thread's next instruction touches (access.go).
	touching map[int][]access
	stepFor  map[int]addrRange
	// followed are the processes gdb was told of, by pid: true while it
	// follows them (the first process, and the children of fork events
	// it keeps), false once it detached. gdb sees only the threads of
	// followed ones, and stops only there. tellForks and tellExecs: gdb
	// takes fork and exec events (qSupported).
	followed             map[int]bool
	tellForks, tellExecs bool
	// ends are the ends of followed processes gdb is yet to be told of.
	ends []ProcessEnd
	// catch are the system calls whose entries and returns stop the
	// program (gdb's catch syscall; nil: none).
	catch *syscallCatch
	// now is where the program stopped last; tally counts arrivals
	// since, for the next stop's mark; seek, while a replay looks for a
	// mark, is its search.
	now   Mark
	tally arrivals
	seek  *seeker
}

// seeker is a replay looking for a mark: silent until it arrives, and on
// the way recording the arrivals at the scan breakpoints before it (a
// reverse continue's candidates).
type seeker struct {
	goal Mark
	hop  int // the next hop of goal.Path to arrive at
	// interruptible: gdb's interrupt ends the replay (errAbandoned) — a
	// reverse command's search, which may step a long stretch.
	interruptible bool
	// scan are the breakpoints whose arrivals before the goal are
	// recorded in hits — only thread scanTID's, if it is not 0.
	scan    map[bpKey]bool
	scanTID int
	hits    []Mark
	// stepTo, if set, has the goal's thread step on from the goal until
	// it lands there, last the place before each step (a reverse step's
	// target); stepping once it does.
	stepTo   uint64
	last     Mark
	stepping bool
	// resumed is, if asked for (findResume), where the thread that ran
	// after the goal's exit began: its first instruction there.
	findResume bool
	resumed    Mark
	// watch, if set, searches for the last write to the watched memory
	// (reverse_watch.go); calls records the entries and returns of these
	// system calls as hits, as gdb's catch syscall stops at them.
	watch *watchScan
	calls *syscallCatch
	// window: no goal, the replay ends at a checkpoint; only scanned.
	window bool
	// at, if set, is the goal instead: an exit count or record time
	// (monitor seek).
	at *exitGoal
	// boot counts a kit guest's arrivals from boot, for the scan's marks,
	// when the goal's count from a later exit; fromExit, once that exit
	// is passed, the goal's count began.
	boot     arrivals
	fromExit bool
}

// wants reports whether the seek needs an int3 at k: a hop's address or
// a scanned breakpoint.
func (sk *seeker) wants(k bpKey) bool {
	if sk.scan[k] {
		return true
	}
	return k.pid == sk.goal.PID && k.image == sk.goal.Image && slices.ContainsFunc(sk.goal.Path, func(h Hop) bool { return h.Addr == k.addr })
}

// scans reports whether a trap is a hit the seek records: at a scanned
// breakpoint, in the scanned thread, and not a retry (the same hit as
// the trap before the fault).
func (sk *seeker) scans(b *Trap) bool {
	return sk.scan[keyAt(b, b.Regs.RIP)] && (sk.scanTID == 0 || sk.scanTID == b.TID) && !b.Retry
}

// hit records a scan's hit at m, where b stopped.
func (sk *seeker) hit(b *Trap, m Mark) {
	m.Time, m.exe = b.RecordTime(), b.Exe(b.PID)
	sk.hits = append(sk.hits, m)
}

// NewSession is a session no server serves yet.
func NewSession() *Session {
	return &Session{stops: make(chan stop), requests: make(chan request), user: map[bpKey]int{}, placed: map[bpKey]int{}, stepFor: map[int]addrRange{}, followed: map[int]bool{}}
}

// replayAgain readies the session for a new replay of the same program,
// looking for sk's mark: nothing is placed in it yet.
func (s *Session) replayAgain(sk *seeker) {
	s.placed, s.stepFor, s.watching, s.seek, s.touching = map[bpKey]int{}, map[int]addrRange{}, false, sk, nil
	s.tally, s.ends = arrivals{}, nil
}

// wanted reports whether the session needs an int3 at k now.
func (s *Session) wanted(k bpKey) bool {
	return s.user[k] > 0 || s.seek != nil && s.seek.wants(k)
}

// Mapped places the session's breakpoints that fall in a mapping as it is
// made: after a replay again, gdb's, and a seek's, in the libraries the
// loader maps on the way — again in a mapping made over one that had
// them (the loader maps a library whole, then its segments over it).
// (In the first replay gdb sets its own once it learns of a library,
// from the loader's breakpoint.)
func (s *Session) Mapped(m linux.Mapping, _ []byte) ([]uint64, error) {
	keys := slices.Collect(maps.Keys(s.user))
	if s.seek != nil {
		keys = append(keys, slices.Collect(maps.Keys(s.seek.scan))...)
		for _, h := range s.seek.goal.Path {
			keys = append(keys, s.seek.goal.key(h.Addr))
		}
	}
	var out []uint64
	for _, k := range keys {
		if k.pid == m.PID && k.image == m.Image && k.addr >= m.Start && k.addr < m.End && s.wanted(k) {
			s.placed[k]++
			out = append(out, k.addr)
		}
	}
	return out, nil
}

// Resumed is told of each thread of a program restored from a
// checkpoint: places after the checkpoint's exit are counted from exits
// the replay makes, but a search for the last write to watched memory
// looks at it from here (resumedScan).
func (s *Session) Resumed(b *linux.Break) error {
	if sk := s.seek; sk != nil && sk.watch != nil && !sk.watch.step {
		s.resumedScan(linuxTrap(b), sk.watch, b.Running)
	}
	return nil
}

// following reports whether gdb follows process pid.
func (s *Session) following(pid int) bool { return s.followed[pid] }

// Break serves a Linux program's stop (linux.Breakpoints).
func (s *Session) Break(b *linux.Break) error { return s.trap(linuxTrap(b)) }

// KitBreak serves a kit guest's stop (replayer.KitDebugger).
func (s *Session) KitBreak(b *replayer.KitBreak) error { return s.trap(kitTrap(b)) }

// Interrupted reports, for a kit guest's replay at exit (made at record
// time recordTime), whether the program is to stop where it can
// (replayer.KitDebugger): a seek's exit or time is reached, or gdb's
// interrupt waits. On the machine's goroutine.
func (s *Session) Interrupted(exit uint64, recordTime func() time.Duration) bool {
	if sk := s.seek; sk != nil {
		return sk.at != nil && sk.at.reachedAt(exit, recordTime()) || s.abandoned()
	}
	return s.interrupt.Load() && !s.detached.Load()
}

// abandoned reports whether gdb's interrupt gives up the seek under way.
func (s *Session) abandoned() bool {
	return s.seek != nil && s.seek.interruptible && s.interrupt.Load() && !s.detached.Load()
}

// interruptedMark is the mark of a kit thread stopped where it stood at
// exit b.Since: its first arrival there since.
func interruptedMark(b *Trap) Mark {
	return Mark{Exit: b.Since, Path: []Hop{{b.Regs.RIP, 1, b.TID}}, TID: b.TID, PID: b.PID}
}

// Exited serves a Linux program's exit (linux.ExitWatcher).
func (s *Session) Exited(b *linux.Break) error { return s.exited(linuxTrap(b)) }

// trap hands a stop of the debugger's to the server and serves its
// requests until it resumes the program. Another process's hit of an
// int3 on a page it shares with the debugged one, a breakpoint cleared
// since, a step that only checked watched memory, anything on a seek's
// way, anything in a process gdb does not follow, or anything after gdb
// detached, goes on at once.
func (s *Session) trap(b *Trap) error {
	if s.detached.Load() {
		return nil
	}
	st := stop{tid: b.TID, pid: b.PID, regs: *b.Regs}
	exit := markExit(b)
	var here Mark
	switch {
	case b.Start:
		if len(s.followed) == 0 {
			s.followed[b.PID] = true // the program's first process
		}
		st.kind, here = stopStart, Mark{Start: true, Exit: exit, TID: b.TID, PID: b.PID, Image: b.Image}
		if s.seek != nil && !s.seek.goal.Start {
			s.tally.restart(here)
			return nil
		}
		s.seek = nil // the start was the goal
	case b.Return:
		return nil
	case s.abandoned():
		return errAbandoned
	case b.Interrupted && s.seek != nil: // a kit guest at a seek's exit
		s.seek = nil
		if err := s.dropUnwanted(b); err != nil {
			return err
		}
		st.kind, here = stopSeek, interruptedMark(b)
	case s.seek != nil:
		return s.seeking(b, exit)
	case !s.following(b.PID):
		return nil
	case b.Interrupted:
		s.interrupt.Store(false)
		st.kind, here = stopInterrupt, interruptedMark(b)
	case b.Resumed && s.user[keyAt(b, b.Regs.RIP)] == 0:
		// A hop of the thread's own, one instruction before its step
		// lands: where a reverse step from the landing goes back to.
		s.tally.restart(s.tally.arrive(exit, b.Regs.RIP, false, b))
		return nil
	case b.Stepped:
		here = s.tally.arrive(exit, b.Regs.RIP, true, b)
		within, asked := s.stepFor[b.TID]
		delete(s.stepFor, b.TID)
		switch w := s.written(b); {
		case w != nil:
			st.kind, st.watch, st.watchKind = stopWatch, w.addr, w.kind
		case asked && within.holds(b.Regs.RIP) && s.user[keyAt(b, b.Regs.RIP)] == 0:
			// Still in the range, at no breakpoint: step on unseen. The
			// tally counts on from the last stop, so the stop's mark is
			// one hop however many steps it took — but from the first
			// landing after an exit (a path of one hop), since the
			// instruction the thread resumed at there was no landing.
			s.stepFor[b.TID] = within
			if len(here.Path) == 1 {
				s.tally.restart(here)
				s.tally.landedOn(b) // an int3 there is this arrival
			}
			if s.watching {
				return s.stepAll(b)
			}
			return b.Step(b.TID)
		case asked:
			st.kind = stopStep
		case s.watching:
			return s.stepAll(b)
		default:
			return nil // a step the server no longer wants
		}
	default:
		here = s.tally.arrive(exit, b.Regs.RIP, false, b)
		if b.Retry || s.user[keyAt(b, b.Regs.RIP)] == 0 {
			return nil // a retry is an arrival, not another hit
		}
		st.kind = stopBreak
	}
	return s.stopAt(b, st, here)
}

// stopAt hands the stop st, at mark here, to the server and serves it.
func (s *Session) stopAt(b *Trap, st stop, here Mark) error {
	here.Time = b.RecordTime()
	s.now = here
	s.tally.restart(here)
	if st.afterExit() {
		s.tally.landedOn(b)
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

// seeking is a trap on a seek's way: the next hop of its goal (the goal
// itself, once the last: the program stops there for the server), a
// scanned breakpoint's hit before it (recorded), or an int3 of neither.
func (s *Session) seeking(b *Trap, exit uint64) error {
	sk, addr := s.seek, b.Regs.RIP
	if sk.at != nil {
		return nil // its goal is an exit's (Exited)
	}
	// A kit place counted from an exit (an interrupt's): the goal's
	// arrivals count from there, a scan's from boot.
	fromExit := b.Kit && sk.goal.Exit > 0
	var bootHere Mark
	if fromExit {
		bootHere = sk.boot.arrive(0, addr, b.Stepped, b)
		if b.Position().Exit < sk.goal.Exit {
			if sk.scans(b) && !sk.stepping {
				sk.hit(b, bootHere)
			}
			return nil
		}
		if exit = sk.goal.Exit; !sk.fromExit {
			sk.fromExit = true
			s.tally.restart(Mark{Exit: exit}) // not from the start's boot
		}
	}
	here := s.tally.arrive(exit, addr, b.Stepped, b)
	if ws := sk.watch; ws != nil && ws.step && sk.stepping {
		switch {
		case !b.Stepped || b.TID != sk.goal.TID:
			return nil
		case s.stepScan(b, sk, here):
			return s.arrived(b, here)
		}
		return b.Step(b.TID)
	}
	if ws := sk.watch; ws != nil && !b.Stepped {
		ws.countAbs(exit, addr)
	}
	if sk.window {
		if sk.scans(b) {
			sk.hit(b, here)
		}
		return nil
	}
	if sk.stepping {
		switch {
		case !b.Stepped || b.TID != sk.goal.TID:
			return nil // an int3 on the way (its landing counted it)
		case addr == sk.stepTo:
			return s.arrived(b, here)
		}
		sk.last = here
		return b.Step(b.TID)
	}
	g := sk.goal
	if exit > g.Exit {
		return fmt.Errorf("debugger: the replay passed exit %d without arriving at its mark (%v)", g.Exit, g.Path)
	}
	hop := exit == g.Exit && b.PID == g.PID && b.Image == g.Image && sk.hop < len(g.Path) && len(here.Path) == sk.hop+1 && here.Path[sk.hop] == g.Path[sk.hop]
	if last := hop && sk.hop+1 == len(g.Path); !last && sk.scans(b) {
		hit := here
		if fromExit {
			hit = bootHere
		}
		sk.hit(b, hit) // before the goal: a hop on the way counts too
	}
	if !hop {
		return nil
	}
	sk.hop++
	s.tally.restart(Mark{Exit: exit, Path: g.Path[:sk.hop]})
	switch ws := sk.watch; {
	case sk.hop < len(g.Path):
		return nil
	case ws != nil && ws.step: // the stretch's first instruction: step it through
		sk.stepping, ws.before = true, here
		ws.countAbs(exit, addr)
		s.look(b, ws)
		return b.Step(b.TID)
	case ws != nil:
		s.goalScan(b, sk)
	case sk.stepTo != 0:
		sk.stepping, sk.last = true, here
		return b.Step(b.TID)
	}
	return s.arrived(b, here)
}

// exited notes, for a seek that asks, where the stretch of execution
// after its goal's exit begins; and, with no seek, stops where it begins
// for a followed process's end, a fork or exec gdb is to be told of, or
// gdb's interrupt.
func (s *Session) exited(b *Trap) error {
	if b.BeforeHandler {
		return s.returnBeforeHandler(b) // the handler's own Break follows
	}
	if s.abandoned() {
		return errAbandoned
	}
	sk := s.seek
	if sk == nil && !s.detached.Load() {
		if stopped, err := s.tellEnd(b); stopped {
			return err
		}
		if s.following(b.PID) {
			switch {
			case b.Forked != 0 && s.tellForks:
				if _, told := s.followed[b.Forked]; !told {
					s.followed[b.Forked] = true
					// The fork's event, then its return, as under Linux.
					if err := s.stopAfterExit(b, stop{kind: stopFork, child: b.Forked}); err != nil || !b.Returned {
						return err
					}
				}
			case b.Execed && s.tellExecs:
				// The exec's event, then its return, as under Linux.
				if err := s.stopAfterExit(b, stop{kind: stopExec, exe: b.Exe(b.PID)}); err != nil || !b.Returned {
					return err
				}
			}
			if b.Returned && s.callStops(b) {
				s.interrupt.Store(false)
				return s.stopAfterExit(b, stop{kind: stopSyscall, call: callStop{nr: b.Syscall}})
			}
			if s.interrupt.Swap(false) {
				return s.stopAfterExit(b, stop{kind: stopInterrupt})
			}
		}
	}
	if sk != nil && b.Returned {
		s.callHit(b, sk, markAfterExit(b))
	}
	switch {
	case sk == nil:
	case sk.at != nil:
		if !sk.at.reached(b) || !s.following(b.PID) {
			return nil
		}
		s.seek = nil
		if err := s.dropUnwanted(b); err != nil {
			return err
		}
		return s.stopAfterExit(b, stop{kind: stopSeek})
	case sk.findResume && b.Position().Exit == sk.goal.Exit:
		sk.resumed = markAfterExit(b)
	case sk.watch != nil && sk.watch.step && sk.stepping && b.Position().Exit > sk.watch.exit:
		return s.arrived(b, Mark{}) // the stretch ended here, past any change in it
	case sk.watch != nil && !sk.watch.step:
		s.exitedScan(b, sk)
	}
	return nil
}

// tellEnd stops the program to tell gdb of a followed process's end
// (stopped), the first not told yet: a W or X stop reply for it, as
// gdbserver sends. gdb no longer follows it. The stop's thread is one
// gdb follows, if one lives.
func (s *Session) tellEnd(b *Trap) (stopped bool, err error) {
	for _, e := range b.Ended {
		if s.following(e.PID) {
			s.followed[e.PID] = false
			s.ends = append(s.ends, e)
		}
	}
	if len(s.ends) == 0 {
		return false, nil
	}
	st := stop{kind: stopEnd, ended: s.ends[0], tid: b.TID, pid: b.PID} // a W or X reply: no registers
	s.ends = s.ends[1:]
	if !s.following(b.PID) {
		for _, t := range b.Threads() {
			if s.following(t.PID) {
				st.tid, st.pid = t.TID, t.PID
				break
			}
		}
	}
	return true, s.stopAt(b, st, markAfterExit(b))
}

// afterExit reports whether the program stopped where a stretch of
// execution begins, before its first instruction ran (stopAfterExit, or a
// kit thread stopped where it stood): an int3 there is the same arrival.
func (st stop) afterExit() bool {
	switch st.kind {
	case stopInterrupt, stopSeek, stopFork, stopExec, stopEnd:
		return true
	case stopSyscall:
		return !st.call.entry && !st.call.beforeHandler
	}
	return false
}

// stopAfterExit stops the program, for st, where the stretch after the
// exit just made begins: its first arrival there, which an int3 there is
// too.
func (s *Session) stopAfterExit(b *Trap, st stop) error {
	st.tid, st.pid, st.regs = b.TID, b.PID, *b.Regs
	return s.stopAt(b, st, markAfterExit(b))
}

// arrived ends a seek where the program is, at here: the program stops
// there for the server — as a syscall stop, if that was the goal.
func (s *Session) arrived(b *Trap, here Mark) error {
	call := s.seek.goal.Call
	s.seek = nil
	if err := s.dropUnwanted(b); err != nil {
		return err
	}
	st := stop{kind: stopStep, tid: b.TID, pid: b.PID, regs: *b.Regs}
	switch {
	case call != nil:
		st.kind, st.call, here.Call = stopSyscall, *call, call
	case s.user[keyAt(b, b.Regs.RIP)] > 0:
		st.kind = stopBreak
	}
	return s.stopAt(b, st, here)
}

// dropUnwanted removes the int3s a seek placed that gdb did not ask for.
func (s *Session) dropUnwanted(b *Trap) error {
	var errs []error
	for k, n := range s.placed {
		if s.wanted(k) {
			continue
		}
		for range n {
			errs = append(errs, b.ClearBreakpoint(k.pid, k.image, k.addr))
		}
		delete(s.placed, k)
	}
	return errors.Join(errs...)
}

// resume sets the program going as r says.
func (s *Session) resume(b *Trap, r resume) error {
	if r.kill {
		return errKilled
	}
	for tid := range s.stepFor {
		if _, again := r.step[tid]; !again {
			// Asked before, and the program stopped elsewhere first:
			// the step ends unseen, as ptrace's PTRACE_CONT ends one.
			delete(s.stepFor, tid)
		}
	}
	for tid, within := range r.step {
		if err := b.Step(tid); err != nil {
			return err
		}
		s.stepFor[tid] = within
	}
	s.watching = r.watch && len(s.watches) > 0
	if s.watching {
		return s.stepAll(b)
	}
	return nil
}

// stepAll has every live thread of the followed processes step, so that
// watched memory is checked after each instruction whichever runs (new
// threads included: each step arms the ones made since). With read or
// access watches, what each thread's next instruction touches is noted
// first.
func (s *Session) stepAll(b *Trap) error {
	reads := slices.ContainsFunc(s.watches, func(w watch) bool { return w.kind != rsp.WatchWrite })
	for _, t := range b.Threads() {
		if !s.following(t.PID) {
			continue
		}
		if reads {
			s.noteTouching(b, t.TID, t.PID)
		}
		if err := b.Step(t.TID); err != nil {
			return err
		}
	}
	return nil
}

// noteTouching notes the memory thread tid of process pid touches with
// the instruction it runs next.
func (s *Session) noteTouching(b *Trap, tid, pid int) {
	if s.touching == nil {
		s.touching = map[int][]access{}
	}
	delete(s.touching, tid)
	st, ok, err := b.State(tid)
	if !ok || err != nil {
		return
	}
	code := make([]byte, 16)
	for len(code) > 0 && b.ReadMemory(pid, st.Regs.RIP, code) != nil {
		code = code[:len(code)-1] // the instruction may end its mapping
	}
	s.touching[tid] = accesses(code, &st.Regs, st.FSBase)
}

// written is the first watch hit by the instruction b's thread just ran,
// nil if none: a write watch whose memory changed since it was last
// checked (every write watch's memory is read again; memory gone, its
// process ended, reads as unchanged), a read watch the instruction read,
// an access watch it touched.
func (s *Session) written(b *Trap) *watch {
	var hit *watch
	for i := range s.watches {
		w := &s.watches[i]
		if w.kind != rsp.WatchWrite {
			if hit == nil && w.pid == b.PID && w.touchedBy(s.touching[b.TID]) {
				hit = w
			}
			continue
		}
		if now := w.read(b); now != nil && !bytes.Equal(now, w.old) {
			w.old = now
			if hit == nil {
				hit = w
			}
		}
	}
	delete(s.touching, b.TID)
	return hit
}

// touchedBy reports whether an instruction with accesses as touched
// the read or access watch w.
func (w *watch) touchedBy(accesses []access) bool {
	return slices.ContainsFunc(accesses, func(a access) bool {
		return (a.read || w.kind == rsp.WatchAccess) && a.touches(w.addr, uint64(len(w.old)))
	})
}

// read is the watched memory now, nil if its process cannot read it.
func (w *watch) read(b *Trap) []byte {
	now := make([]byte, len(w.old))
	if b.ReadMemory(w.pid, w.addr, now) != nil {
		return nil
	}
	return now
}

// setWatch and clearWatch change the watched memory, on the machine's
// goroutine.
func (s *Session) setWatch(b *Trap, pid int, addr uint64, size int, kind rsp.BreakKind) error {
	if len(s.watches) >= maxWatches || size <= 0 || size > maxWatchSize {
		return fmt.Errorf("debugger: at most %d watches of at most %d bytes", maxWatches, maxWatchSize)
	}
	old := make([]byte, size)
	if err := b.ReadMemory(pid, addr, old); err != nil {
		return err
	}
	s.watches = append(s.watches, watch{pid: pid, addr: addr, old: old, kind: kind})
	return nil
}

func (s *Session) clearWatch(pid int, addr uint64, size int, kind rsp.BreakKind) {
	for i, w := range s.watches {
		if w.pid == pid && w.addr == addr && len(w.old) == size && w.kind == kind {
			s.watches = slices.Delete(s.watches, i, i+1)
			return
		}
	}
}

// setBreak and clearBreak change gdb's breakpoints, on the machine's
// goroutine.
func (s *Session) setBreak(b *Trap, k bpKey) error {
	for old := range s.user {
		if old.pid == k.pid && old.image < k.image {
			// Gone with the image exec replaced (the kernel let its
			// int3s go): gdb sets its breakpoints anew after an exec
			// without clearing the old ones.
			delete(s.user, old)
			delete(s.placed, old)
		}
	}
	if s.user[k] == 0 && len(s.user) >= maxBreakpoints {
		return fmt.Errorf("debugger: at most %d breakpoints", maxBreakpoints)
	}
	if s.placed[k] == 0 {
		if err := b.SetBreakpoint(k.pid, k.image, k.addr); err != nil {
			return err
		}
		s.placed[k]++
	}
	s.user[k]++
	return nil
}

func (s *Session) clearBreak(b *Trap, k bpKey) error {
	if s.user[k] == 0 {
		return nil
	}
	if s.user[k]--; s.user[k] > 0 {
		return nil
	}
	delete(s.user, k)
	return s.dropUnwanted(b)
}

// unfollow stops following process pid: gdb detached from it. Its
// breakpoints and watches go.
func (s *Session) unfollow(b *Trap, pid int) error {
	if _, told := s.followed[pid]; told {
		s.followed[pid] = false
	}
	for k := range s.user {
		if k.pid == pid {
			delete(s.user, k)
		}
	}
	s.watches = slices.DeleteFunc(s.watches, func(w watch) bool { return w.pid == pid })
	return s.dropUnwanted(b)
}

// clearAll removes every breakpoint of the debugger's.
func (s *Session) clearAll(b *Trap) error {
	clear(s.user)
	return s.dropUnwanted(b)
}
