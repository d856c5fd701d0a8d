package debugger

import (
	"slices"
	"time"
)

// Marks: places in a replay a debugger can go back to. A replay runs the
// same instructions in every thread every time. So a place is an exit
// count and a path from there: thread T's k-th arrival at an address
// after the exit, then thread T''s k'-th arrival at the next after that,
// and so on — each hop what one continue or step did. A replay finds a
// mark again with an int3 at each hop's address, counting each thread's
// traps after the exit; forwards, the session counts arrivals the same
// way, at its breakpoints' traps and its steps' landings, so a stop's
// mark is known as it happens. A Linux program's positions are exit-sync
// (a position is the count of its exits), and between two exits one
// thread runs: each exit begins a path. A kit guest's kernel switches
// threads with no exit, so its paths begin at boot (exit 0) or, after
// gdb's interrupt, at the exit where the stopped thread stood.

// Hop is thread TID's Count-th arrival at Addr, counted from the
// previous hop (or the exit).
type Hop struct {
	Addr  uint64
	Count int
	TID   int
}

// Mark is a place in the replay: after exit Exit, along Path, in thread
// TID of process PID, running its image Image; Start is the program's
// first instruction. Time, if known (a stop's, a scan's hit's), is the
// recording's time there: where the checkpoints a replay to the place
// takes gather. Call, for a syscall stop's place (syscalls.go), is that
// stop: a call's return is where the stretch after its exit begins; its
// entry is at exit Exit itself, before the kernel serves the call — a
// place with no path.
type Mark struct {
	Start    bool
	Exit     uint64
	Path     []Hop
	TID, PID int
	Image    uint64
	Time     time.Duration
	Call     *callStop
	// exe, for a scan's hit, is the executable its process ran there.
	exe string
}

// entry reports whether m is a system call's entry.
func (m Mark) entry() bool { return m.Call != nil && m.Call.entry }

// beforeHandler reports whether m is the return of a system call that a
// signal's handler runs after.
func (m Mark) beforeHandler() bool { return m.Call != nil && m.Call.beforeHandler }

// atExit reports whether m is found at its exit's callback, with no
// path: a call's entry, or its return before a handler.
func (m Mark) atExit() bool { return m.entry() || m.beforeHandler() }

// same reports whether m and o are one place.
func (m Mark) same(o Mark) bool {
	return m.Start == o.Start && m.Exit == o.Exit && m.TID == o.TID && m.PID == o.PID && m.Image == o.Image &&
		m.entry() == o.entry() && m.beforeHandler() == o.beforeHandler() && slices.Equal(m.Path, o.Path)
}

// key is where a breakpoint at addr in m's process and image is.
func (m Mark) key(addr uint64) bpKey { return bpKey{m.PID, m.Image, addr} }

// markAfterExit is the mark of the first instruction b's thread runs
// after the exit just made: where its stretch begins.
func markAfterExit(b *Trap) Mark {
	return Mark{Exit: b.Position().Exit, Path: []Hop{{b.Regs.RIP, 1, b.TID}}, TID: b.TID, PID: b.PID, Image: b.Image}
}

// arrivals counts arrivals since the last stop or exit: the session's
// running tally, from which each stop's mark is made.
type arrivals struct {
	exit  uint64
	base  []Hop // the path to where counting began, in interval exit
	count map[arrival]int
	// landed is where a step just landed, whose int3 (if it has one) is
	// the same arrival (a Linux program's: its step traps after the
	// instruction, its int3 before the next).
	landed arrival
}

// arrival is a thread's arrival at an address.
type arrival struct {
	tid  int
	addr uint64
}

// restart counts from m, where the program stopped.
func (a *arrivals) restart(m Mark) {
	a.exit, a.base, a.count, a.landed = m.Exit, slices.Clone(m.Path), map[arrival]int{}, arrival{}
}

// arrive counts b's thread's arrival at addr in exit interval exit (a
// step's landing, or an int3's trap unless a landing there counted it)
// and returns the mark of that place.
func (a *arrivals) arrive(exit, addr uint64, landing bool, b *Trap) Mark {
	if a.count == nil || exit != a.exit && !b.Kit {
		a.exit, a.base, a.count = exit, nil, map[arrival]int{}
	}
	here := arrival{b.TID, addr}
	if landing || a.landed != here {
		a.count[here]++
	}
	a.landed = arrival{}
	if landing && !b.Kit {
		a.landed = here
	}
	return Mark{Exit: a.exit, Path: append(slices.Clone(a.base), Hop{addr, a.count[here], b.TID}), TID: b.TID, PID: b.PID, Image: b.Image}
}

// landedOn notes that b's thread stands where an int3 it hits next is the
// arrival just counted (a Linux program's).
func (a *arrivals) landedOn(b *Trap) {
	if !b.Kit {
		a.landed = arrival{b.TID, b.Regs.RIP}
	}
}

// markExit is the exit b's marks count from: the last, for a Linux
// program; for a kit guest boot, or the exit a mark it counts on from
// began at (an interrupt's: arrive keeps a kit tally's exit).
func markExit(b *Trap) uint64 {
	if b.Kit {
		return 0
	}
	return b.Position().Exit
}
