// Package deadlock finds potential deadlocks in a run's lock operations
// (docs/architecture.md, "Diagnosis tools"), after Agarwal and Stoller as
// InSight applies it:
//
//   - Each thread's acquisitions form a lock tree: a path from the root to
//     a node is a stack of locks the thread held at once.
//   - Interleaving edges join nodes of one lock in different threads' trees:
//     a thread waiting for the lock may be waiting for the other. A trylock
//     never waits, so a node the thread only ever took by trylock has no
//     outgoing edge (other threads may still wait for it). A timed lock that
//     timed out adds no node.
//   - A cycle is a chain of threads, each holding a lock (a tree node) and
//     then asking for a lock below it in its tree that the next thread
//     holds, back to the first. A depth-first search finds every cycle
//     through distinct threads and distinct locks.
//   - The locks held at a step are all the locks its thread holds when it
//     asks for the next one: the path above the wanted lock's node. Two
//     steps holding one lock cannot be in progress at once, so a cycle can
//     happen only if the locks held at its steps are pairwise disjoint (the
//     improved goodlock rule of Agarwal and Stoller, and of Bensalem and
//     Havelund). A chain whose steps share one of the cycle's own locks is
//     no cycle and is not reported; one whose steps share another lock (a
//     gate) is reported as protected by that lock, with the threads that
//     hold it. A cycle that exists only through a trylock is reported as
//     safe.
//   - A reader-writer lock taken for reading does not keep another reader
//     out: an edge between two nodes of one rwlock that were only ever
//     read-locked is no edge.
package deadlock

import (
	"cmp"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/tools/lockops"
	"github.com/reprise-vm/reprise/tools/report"
)

// node is a lock-tree node: a lock acquired with its ancestors held.
type node struct {
	lock     uint64
	thread   uint32
	parent   *node
	children map[uint64]*node
	site     uint64 // return address of its first acquisition
	waits    bool   // some acquisition could wait: not every one was a trylock
	count    uint64
	// exclusive says some acquisition excluded every other thread (a
	// mutex's, an rwlock's for writing); only read locks leave it false.
	exclusive bool
}

// conflicts reports whether a thread asking for wait's lock may wait for
// a thread holding hold's: unless both only ever read-locked it.
func conflicts(wait, hold *node) bool { return wait.exclusive || hold.exclusive }

// ancestors are the lock nodes above n, nearest first: the locks its
// thread held when it took n's (the tree's root is no lock).
func (n *node) ancestors() []*node {
	var out []*node
	for a := n.parent; a != nil && a.parent != nil; a = a.parent {
		out = append(out, a)
	}
	return out
}

func (n *node) child(lock uint64) *node {
	c := n.children[lock]
	if c == nil {
		c = &node{lock: lock, thread: n.thread, parent: n, children: map[uint64]*node{}}
		n.children[lock] = c
	}
	return c
}

// tree is one thread's lock tree and its held stack while scanning.
type tree struct {
	root node
	held []*node
}

// Lock names a lock in a report.
type Lock struct {
	Addr uint64 `json:"addr"`
	Name string `json:"name"`
}

// Step is one thread's part of a cycle: holding one lock, it asks for the
// next. Holds, HeldAbove and HeldBetween are the locks held at the step.
type Step struct {
	Thread      uint32 `json:"thread"`
	Holds       Lock   `json:"holds"`
	HoldsAt     string `json:"holds_at"` // where it acquired the held lock
	HoldsHow    string `json:"holds_how"`
	WaitsFor    Lock   `json:"waits_for"`
	WaitsAt     string `json:"waits_at"`
	WaitsHow    string `json:"waits_how"`
	HeldAbove   []Lock `json:"held_above,omitempty"`   // taken before Holds and still held, nearest first
	HeldBetween []Lock `json:"held_between,omitempty"` // taken after Holds and still held when it asks for WaitsFor, in order
}

// Gate is a lock held at two or more steps of a cycle, which keeps those
// threads out of the cycle at the same time.
type Gate struct {
	Lock
	Threads []uint32 `json:"threads"` // the threads holding it at their steps, in the cycle's order
}

// Cycle is a potential deadlock (or a protected or safe one).
type Cycle struct {
	Steps []Step `json:"steps"`
	Gate  *Gate  `json:"gate,omitempty"` // Protected: the lock that keeps the threads apart
}

// Notation writes the cycle as InSight does: L1@T1>L2@T1>L2@T2>…>L1@T1,
// with names from name(thread).
func (c *Cycle) Notation(name func(uint32) string) string {
	var b strings.Builder
	for _, s := range c.Steps {
		fmt.Fprintf(&b, "%s@%s>%s@%s>", s.Holds.Name, name(s.Thread), s.WaitsFor.Name, name(s.Thread))
	}
	first := c.Steps[0]
	fmt.Fprintf(&b, "%s@%s", first.Holds.Name, name(first.Thread))
	return b.String()
}

// Report is the tool's result.
type Report struct {
	Run       uint32  `json:"run"`
	Threads   int     `json:"threads"`      // threads that acquired locks
	Locks     int     `json:"locks"`        // distinct locks acquired
	Nested    int     `json:"nested"`       // lock-tree nodes below a root: acquisitions with a lock held
	Deadlocks []Cycle `json:"deadlocks"`    // potential deadlocks
	Protected []Cycle `json:"protected"`    // cycles a gate lock keeps from happening
	TrySafe   []Cycle `json:"trylock_safe"` // cycles only a trylock would close

	// Whether the run is incomplete, or newer incomplete runs were skipped.
	report.RunNote
}

// Options pick the run.
type Options struct {
	Run uint32 // 0: the latest complete run with lock probes
}

// Build scans the run and searches its lock trees.
func Build(db *eventdb.DB, o Options) (*Report, error) {
	choice, err := db.ChooseRun(o.Run, lockops.CheckRun)
	if err != nil {
		return nil, fmt.Errorf("deadlock: %w", err)
	}
	run := &choice.Run
	syms, err := db.Symbols()
	if err != nil {
		return nil, fmt.Errorf("deadlock: %w", err)
	}
	trees := map[uint32]*tree{}
	locks := map[uint64]uint64{} // lock → the site of its first acquisition
	err = lockops.Scan(db, run, func(op *lockops.Op) error {
		t := trees[op.Thread]
		if t == nil {
			t = &tree{root: node{thread: op.Thread, children: map[uint64]*node{}}}
			trees[op.Thread] = t
		}
		switch op.Kind {
		case lockops.Acquired:
			if slices.ContainsFunc(t.held, func(n *node) bool { return n.lock == op.Lock }) {
				return nil // recursive: no new order
			}
			parent := &t.root
			if len(t.held) > 0 {
				parent = t.held[len(t.held)-1]
			}
			n := parent.child(op.Lock)
			if n.count == 0 {
				n.site = op.Site
			}
			n.count++
			if op.Mode != lockops.Try {
				n.waits = true
			}
			if !op.Shared {
				n.exclusive = true
			}
			t.held = append(t.held, n)
			if _, ok := locks[op.Lock]; !ok {
				locks[op.Lock] = op.Site
			}
		case lockops.Release:
			for i := len(t.held) - 1; i >= 0; i-- {
				if t.held[i].lock == op.Lock {
					t.held = slices.Delete(t.held, i, i+1)
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("deadlock: %w", err)
	}
	rep := &Report{Run: run.ID, RunNote: report.NoteOf(&choice), Locks: len(locks)}
	var segs []segment
	for _, t := range trees {
		if len(t.root.children) > 0 {
			rep.Threads++
		}
		walk(&t.root, func(n *node) {
			if n.parent != &t.root {
				rep.Nested++
			}
		})
		segs = append(segs, segments(&t.root)...)
	}
	slices.SortFunc(segs, func(a, b segment) int {
		return cmp.Or(cmp.Compare(a.thread(), b.thread()), cmp.Compare(a.hold.lock, b.hold.lock), cmp.Compare(a.wait.lock, b.wait.lock))
	})
	describe := func(addr uint64) Lock { return Lock{Addr: addr, Name: lockops.Name(syms, addr, locks[addr])} }
	// cycles has dropped every chain whose steps share one of its own
	// locks, so a lock two steps share here lies outside the cycle: a
	// gate. The order matters: checking disjointness on every held lock
	// would drop the gated cycles, and looking for a gate first would call
	// protected a chain that a gate has no part in stopping.
	for _, c := range cycles(segs) {
		cyc := Cycle{}
		trySafe := false
		for _, s := range c {
			st := Step{Thread: s.thread(), Holds: describe(s.hold.lock), HoldsAt: syms.Describe(s.hold.site), HoldsHow: how(s.hold),
				WaitsFor: describe(s.wait.lock), WaitsAt: syms.Describe(s.wait.site), WaitsHow: how(s.wait)}
			for _, a := range s.hold.ancestors() {
				st.HeldAbove = append(st.HeldAbove, describe(a.lock))
			}
			for _, b := range s.between() {
				st.HeldBetween = append(st.HeldBetween, describe(b.lock))
			}
			trySafe = trySafe || !s.wait.waits
			cyc.Steps = append(cyc.Steps, st)
		}
		switch g, threads := gate(c); {
		case trySafe:
			rep.TrySafe = append(rep.TrySafe, cyc)
		case threads != nil:
			cyc.Gate = &Gate{Lock: describe(g), Threads: threads}
			rep.Protected = append(rep.Protected, cyc)
		default:
			rep.Deadlocks = append(rep.Deadlocks, cyc)
		}
	}
	return rep, nil
}

func how(n *node) string {
	switch {
	case !n.waits:
		return "trylock"
	case !n.exclusive:
		return "read lock"
	}
	return "lock"
}

func walk(n *node, f func(*node)) {
	for _, c := range n.children {
		f(c)
		walk(c, f)
	}
}

// segment is a thread's possible part in a cycle: it holds hold and asks
// for wait, a node below it.
type segment struct{ hold, wait *node }

func (s segment) thread() uint32 { return s.hold.thread }

// held yields the locks held at the segment, nearest wait first: every
// lock node above wait, which the thread holds when it asks for wait's
// lock (hold among them).
func (s segment) held() iter.Seq[*node] {
	return func(yield func(*node) bool) {
		for a := s.wait.parent; a != nil && a.parent != nil; a = a.parent {
			if !yield(a) {
				return
			}
		}
	}
}

// holds reports whether lock is held at the segment.
func (s segment) holds(lock uint64) bool {
	for a := range s.held() {
		if a.lock == lock {
			return true
		}
	}
	return false
}

// between are the lock nodes below hold and above wait, in the order the
// thread took them: taken after hold and still held when it asks for wait.
func (s segment) between() []*node {
	var out []*node
	for a := range s.held() {
		if a == s.hold {
			break
		}
		out = append(out, a)
	}
	slices.Reverse(out)
	return out
}

// segments lists every (ancestor, descendant) pair of a tree.
func segments(root *node) []segment {
	var out []segment
	walk(root, func(n *node) {
		for _, a := range n.ancestors() {
			out = append(out, segment{hold: a, wait: n})
		}
	})
	return out
}

// cycles finds the chains of segments through distinct threads and
// distinct locks where each segment asks for the lock the next one holds,
// back to the first, and no segment holds at its step the lock another
// segment of the chain holds as its part (the held sets may share only
// locks outside the chain: gates). Checking each segment against those
// before it as it joins the chain covers every pair. Each cycle is found
// once: from its smallest thread.
func cycles(segs []segment) [][]segment {
	byHold := map[uint64][]segment{}
	for _, s := range segs {
		byHold[s.hold.lock] = append(byHold[s.hold.lock], s)
	}
	var out [][]segment
	var path []segment
	var dfs func(start segment)
	dfs = func(start segment) {
		last := path[len(path)-1]
		if len(path) > 1 && last.wait.lock == start.hold.lock {
			if conflicts(last.wait, start.hold) {
				out = append(out, slices.Clone(path))
			}
			return
		}
		for _, next := range byHold[last.wait.lock] {
			if next.thread() <= start.thread() || !conflicts(last.wait, next.hold) || slices.ContainsFunc(path, func(s segment) bool {
				return s.thread() == next.thread() || s.hold.lock == next.hold.lock || s.hold.lock == next.wait.lock && next.wait.lock != start.hold.lock ||
					s.holds(next.hold.lock) || next.holds(s.hold.lock)
			}) {
				continue
			}
			path = append(path, next)
			dfs(start)
			path = path[:len(path)-1]
		}
	}
	for _, s := range segs {
		path = append(path[:0], s)
		dfs(s)
	}
	return out
}

// gate returns a lock held at two or more of the cycle's segments and the
// threads holding it, in the cycle's order, or nil threads if there is
// none. It prefers the lock held by the most threads, then the lowest
// address, so a gate every thread holds is named when there is one.
func gate(c []segment) (uint64, []uint32) {
	holders := map[uint64][]uint32{}
	for _, s := range c {
		for a := range s.held() {
			holders[a.lock] = append(holders[a.lock], s.thread())
		}
	}
	var best uint64
	var threads []uint32
	for l, ts := range holders {
		if len(ts) > 1 && (len(ts) > len(threads) || len(ts) == len(threads) && l < best) {
			best, threads = l, ts
		}
	}
	return best, threads
}
