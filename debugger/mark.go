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
// TID of process PID; Start is the program's first instruction.
type Mark struct {
	Start    bool
	Exit     uint64
	Path     []Hop
	TID, PID int
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
// returns the mark of that place.
func (a *arrivals) arrive(exit, addr uint64, landing bool, tid, pid int) Mark {
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
	return Mark{Exit: exit, Path: append(slices.Clone(a.base), Hop{addr, a.count[addr]}), TID: tid, PID: pid}
}
