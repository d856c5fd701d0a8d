package debugger

import "slices"

// Marks: places in a replay a debugger can go back to. Positions here are
// exit-sync — a position is the count of the program's exits — and
// between two exits only one thread runs, the same instructions in every
// replay. So a place is an exit count and a path from there: the k-th
// arrival at an address after the exit, then the k'-th arrival at the
// next after that, and so on — each hop what one continue or step did.
// A replay finds a mark again with an int3 at each hop's address,
// counting the traps after the exit; forwards, the session counts
// arrivals the same way, at its breakpoints' traps and its steps'
// landings, so a stop's mark is known as it happens.

// Hop is the Count-th arrival at Addr, counted from the previous hop (or
// the exit).
type Hop struct {
	Addr  uint64
	Count int
}

// Mark is a place in the replay: after exit Exit, along Path, in thread
// TID of process PID, running its image Image; Start is the program's
// first instruction.
type Mark struct {
	Start    bool
	Exit     uint64
	Path     []Hop
	TID, PID int
	Image    uint64
}

// key is where a breakpoint at addr in m's process and image is.
func (m Mark) key(addr uint64) bpKey { return bpKey{m.PID, m.Image, addr} }

// markAfterExit is the mark of the first instruction b's thread runs
// after the exit just made: where its stretch begins.
func markAfterExit(b *Trap) Mark {
	return Mark{Exit: b.Position().Exit, Path: []Hop{{b.Regs.RIP, 1}}, TID: b.TID, PID: b.PID, Image: b.Image}
}

// arrivals counts arrivals since the last stop or exit: the session's
// running tally, from which each stop's mark is made.
type arrivals struct {
	exit  uint64
	base  []Hop // the path to where counting began, in interval exit
	count map[uint64]int
	// landed is the address a step just landed on, whose int3 (if it
	// has one) is the same arrival.
	landed uint64
}

// restart counts from m, where the program stopped.
func (a *arrivals) restart(m Mark) {
	a.exit, a.base, a.count, a.landed = m.Exit, slices.Clone(m.Path), map[uint64]int{}, 0
}

// arrive counts an arrival at addr in exit interval exit (a step's
// landing, or an int3's trap unless a landing there counted it) and
// returns the mark of that place, in b's thread.
func (a *arrivals) arrive(exit, addr uint64, landing bool, b *Trap) Mark {
	if exit != a.exit || a.count == nil {
		a.exit, a.base, a.count = exit, nil, map[uint64]int{}
	}
	if landing || a.landed != addr {
		a.count[addr]++
	}
	a.landed = 0
	if landing {
		a.landed = addr
	}
	return Mark{Exit: exit, Path: append(slices.Clone(a.base), Hop{addr, a.count[addr]}), TID: b.TID, PID: b.PID, Image: b.Image}
}
