package deadlock

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Write prints a lockdep-style report: each potential deadlock with every
// thread's held and wanted lock and where it took them, then the cycles
// that cannot happen and why.
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	tid := func(t uint32) string { return strconv.FormatUint(uint64(t), 10) }
	fmt.Fprintf(&b, "run %d: %d threads took %d locks, %d times with another lock held\n", r.Run, r.Threads, r.Locks, r.Nested)
	switch {
	case len(r.Deadlocks) == 0 && r.Incomplete:
		b.WriteString("no potential deadlock before the cut: the run is incomplete, its replay stopped early, and later lock orders were not seen\n")
	case len(r.Deadlocks) == 0:
		b.WriteString("no potential deadlock\n")
	}
	for i, c := range r.Deadlocks {
		fmt.Fprintf(&b, "\npotential deadlock %d of %d: %d threads, cycle %s\n", i+1, len(r.Deadlocks), len(c.Steps), c.Notation(tid))
		writeSteps(&b, &c)
	}
	for _, c := range r.Protected {
		fmt.Fprintf(&b, "\nprotected by %s: cycle %s cannot happen, %s\n", c.Gate.Name, c.Notation(tid), c.Gate.why(len(c.Steps)))
		writeSteps(&b, &c)
	}
	for _, c := range r.TrySafe {
		fmt.Fprintf(&b, "\nsafe: cycle %s closes only through a trylock, which never waits\n", c.Notation(tid))
		writeSteps(&b, &c)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// why says which of a cycle's threads hold the gate, and so why they
// cannot all be in it at once: a gate need not be held by every thread.
func (g *Gate) why(steps int) string {
	if len(g.Threads) == steps {
		return fmt.Sprintf("every thread in it holds %s when it asks for its next lock", g.Name)
	}
	ids := make([]string, len(g.Threads))
	for i, t := range g.Threads {
		ids[i] = strconv.FormatUint(uint64(t), 10)
	}
	last := len(ids) - 1
	return fmt.Sprintf("threads %s and %s hold %s when they ask for their next lock", strings.Join(ids[:last], ", "), ids[last], g.Name)
}

func writeSteps(b *strings.Builder, c *Cycle) {
	for _, s := range c.Steps {
		pad := len(fmt.Sprint(s.Thread)) + 7 // under "thread N"
		fmt.Fprintf(b, "  thread %d holds %s (%#x), taken by %s at %s\n", s.Thread, s.Holds.Name, s.Holds.Addr, s.HoldsHow, s.HoldsAt)
		fmt.Fprintf(b, "  %*s and takes %s (%#x) by %s at %s\n", pad, "", s.WaitsFor.Name, s.WaitsFor.Addr, s.WaitsHow, s.WaitsAt)
		if len(s.HeldAbove) > 0 {
			fmt.Fprintf(b, "  %*s while holding %s\n", pad, "", names(s.HeldAbove))
		}
		if len(s.HeldBetween) > 0 {
			fmt.Fprintf(b, "  %*s still holding %s, taken after %s\n", pad, "", names(s.HeldBetween), s.Holds.Name)
		}
	}
}

func names(ls []Lock) string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name
	}
	return strings.Join(out, ", ")
}
