// Package lockstat is the lock contention tool (docs/architecture.md,
// "Diagnosis tools"): a mutrace / perf-lock style table per lock and a
// per-thread breakdown, computed from a run's lock operations (package
// lockops).
//
// Definitions, chosen to match what the guest kit's mutex counts itself:
// an acquisition is contended when, as the thread asked, another thread
// held the lock (the blocking and timed kinds then wait); a try-lock that
// finds the lock held fails and is counted apart. An owner change is an
// acquisition by another thread than the previous one. Wait time runs from
// the request to the acquisition, hold time from the acquisition to the
// release, both in record time. A reader-writer lock is a lock of its own
// kind: a read acquisition is contended only when a writer holds the
// lock, a write acquisition when anyone else does; owner changes count
// write acquisitions only.
package lockstat

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/tools/lockops"
	"github.com/reprise-vm/reprise/tools/report"
)

// Counts are the figures kept per lock and per thread.
type Counts struct {
	Requests     uint64        `json:"requests"`
	Acquired     uint64        `json:"acquired"`
	Contended    uint64        `json:"contended"`
	TryFailed    uint64        `json:"try_failed"`
	TimedOut     uint64        `json:"timed_out"`
	OwnerChanges uint64        `json:"owner_changes"`
	WaitTotal    time.Duration `json:"wait_total_ns"`
	WaitMax      time.Duration `json:"wait_max_ns"`
	HoldTotal    time.Duration `json:"hold_total_ns"`
	HoldMax      time.Duration `json:"hold_max_ns"`
	Holds        uint64        `json:"holds"` // acquisitions whose release was seen
}

// BlockedPct is the share of acquisitions that were contended.
func (c *Counts) BlockedPct() float64 { return pct(c.Contended, c.Acquired) }

// OwnerChangePct is the share of acquisitions that changed the owner.
func (c *Counts) OwnerChangePct() float64 { return pct(c.OwnerChanges, c.Acquired) }

// WaitAvg is the mean wait per acquisition.
func (c *Counts) WaitAvg() time.Duration { return avg(c.WaitTotal, c.Acquired) }

// HoldAvg is the mean hold per release seen.
func (c *Counts) HoldAvg() time.Duration { return avg(c.HoldTotal, c.Holds) }

func pct(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

func avg(d time.Duration, n uint64) time.Duration {
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

// Lock is one lock's figures.
type Lock struct {
	Addr      uint64 `json:"addr"`
	Name      string `json:"name"`       // its symbol, e.g. "level2+0x20"
	Kind      string `json:"kind"`       // "mutex" or "rwlock"
	Reads     uint64 `json:"reads"`      // an rwlock's read acquisitions
	Writes    uint64 `json:"writes"`     // an rwlock's write acquisitions
	FirstSite string `json:"first_site"` // where it was first acquired, e.g. "worker+0x5c"
	Threads   int    `json:"threads"`    // distinct threads that acquired it
	Counts
	threads   map[uint32]bool
	firstSite uint64
}

// Thread is one thread's figures over every lock.
type Thread struct {
	ID    uint32 `json:"thread"`
	Locks int    `json:"locks"` // distinct locks it acquired
	Counts
	locks map[uint64]bool
}

// Report is lockstat's result for one run.
type Report struct {
	Run        uint32    `json:"run"`
	Locks      []*Lock   `json:"locks"`
	Threads    []*Thread `json:"threads"`
	Total      Counts    `json:"total"`
	Unreleased int       `json:"unreleased"` // locks still held when the run ended

	// Whether the run is incomplete, or newer incomplete runs were skipped.
	report.RunNote
}

// SortKey orders locks.
type SortKey string

// Sort keys, descending.
const (
	ByLocked       SortKey = "locked"
	ByContended    SortKey = "contended"
	ByOwnerChanges SortKey = "owner-changes"
	ByWait         SortKey = "wait"
	ByHold         SortKey = "hold"
)

// SortKeys lists the valid sort keys.
var SortKeys = []SortKey{ByLocked, ByContended, ByOwnerChanges, ByWait, ByHold}

func (k SortKey) value(c *Counts) uint64 {
	switch k {
	case ByContended:
		return c.Contended
	case ByOwnerChanges:
		return c.OwnerChanges
	case ByWait:
		return uint64(c.WaitTotal)
	case ByHold:
		return uint64(c.HoldTotal)
	}
	return c.Acquired
}

// Options say which run to read and how to order the report.
type Options struct {
	Run  uint32  // 0: the latest complete run with lock probes
	Sort SortKey // "": ByContended
	Top  int     // 0: every lock
}

// lockState is a lock's state while the run is replayed in order.
type lockState struct {
	held     bool
	owner    uint32        // the last thread to acquire it (holding it if held)
	acquired time.Duration // when owner acquired it
	// readers are an rwlock's read holds: when each thread took them.
	readers map[uint32][]time.Duration
}

// heldByAnyone reports whether any thread holds the lock.
func (s *lockState) heldByAnyone() bool {
	for _, holds := range s.readers {
		if len(holds) > 0 {
			return true
		}
	}
	return s.held
}

// heldAgainst reports whether another thread than tid holds the lock in
// a way a request (shared: for reading) must wait for.
func (s *lockState) heldAgainst(tid uint32, shared bool) bool {
	if s.held && s.owner != tid {
		return true
	}
	if shared {
		return false
	}
	for r, holds := range s.readers {
		if r != tid && len(holds) > 0 {
			return true
		}
	}
	return false
}

// Build computes the report.
func Build(db *eventdb.DB, o Options) (*Report, error) {
	if o.Sort == "" {
		o.Sort = ByContended
	}
	if !slices.Contains(SortKeys, o.Sort) {
		return nil, fmt.Errorf("lockstat: unknown sort key %q (one of %v)", o.Sort, SortKeys)
	}
	choice, err := db.ChooseRun(o.Run, lockops.CheckRun)
	if err != nil {
		return nil, fmt.Errorf("lockstat: %w", err)
	}
	run := &choice.Run
	syms, err := db.Symbols()
	if err != nil {
		return nil, fmt.Errorf("lockstat: %w", err)
	}
	locks := map[uint64]*Lock{}
	threads := map[uint32]*Thread{}
	states := map[uint64]*lockState{}
	type req struct {
		at        time.Duration
		contended bool
	}
	requests := map[uint32]req{} // thread → its request in progress
	lockOf := func(addr uint64) (*Lock, *lockState) {
		l := locks[addr]
		if l == nil {
			l = &Lock{Addr: addr, Kind: "mutex", threads: map[uint32]bool{}}
			locks[addr] = l
			states[addr] = &lockState{readers: map[uint32][]time.Duration{}}
		}
		return l, states[addr]
	}
	threadOf := func(id uint32) *Thread {
		t := threads[id]
		if t == nil {
			t = &Thread{ID: id, locks: map[uint64]bool{}}
			threads[id] = t
		}
		return t
	}
	err = lockops.Scan(db, run, func(op *lockops.Op) error {
		l, s := lockOf(op.Lock)
		if op.RW {
			l.Kind = "rwlock"
		}
		t := threadOf(op.Thread)
		var d Counts // what this operation adds to the lock's and the thread's
		switch op.Kind {
		case lockops.Request:
			d.Requests = 1
			requests[op.Thread] = req{at: op.Time, contended: s.heldAgainst(op.Thread, op.Shared)}
		case lockops.Failed:
			r := requests[op.Thread]
			delete(requests, op.Thread)
			if op.Mode == lockops.Timed {
				d.TimedOut, d.WaitTotal = 1, op.Time-r.at
			} else {
				d.TryFailed = 1
			}
		case lockops.Acquired:
			r := requests[op.Thread]
			delete(requests, op.Thread)
			d.Acquired = 1
			if r.contended {
				d.Contended = 1
			}
			if l.Acquired == 0 {
				l.FirstSite, l.firstSite = syms.Describe(op.Site), op.Site
			} else if s.owner != op.Thread && !op.Shared {
				d.OwnerChanges = 1
			}
			d.WaitTotal = max(op.Time-r.at, 0)
			d.WaitMax = d.WaitTotal
			switch {
			case op.Shared:
				l.Reads++
				s.readers[op.Thread] = append(s.readers[op.Thread], op.Time)
			default:
				if op.RW {
					l.Writes++
				}
				s.held, s.owner, s.acquired = true, op.Thread, op.Time
			}
			l.threads[op.Thread] = true
			t.locks[op.Lock] = true
		case lockops.Release:
			// An rwlock's unlock releases the thread's write hold, else
			// one of its read holds.
			switch reads := s.readers[op.Thread]; {
			case s.held && s.owner == op.Thread:
				d.Holds = 1
				d.HoldTotal = max(op.Time-s.acquired, 0)
				s.held = false
			case op.RW && len(reads) > 0:
				d.Holds = 1
				d.HoldTotal = max(op.Time-reads[len(reads)-1], 0)
				s.readers[op.Thread] = reads[:len(reads)-1]
			default:
				s.held = false
			}
			d.HoldMax = d.HoldTotal
		}
		l.add(&d)
		t.add(&d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lockstat: %w", err)
	}
	rep := &Report{Run: run.ID, RunNote: report.NoteOf(&choice)}
	for _, l := range locks {
		if l.Acquired == 0 && l.Requests == 0 {
			continue // an unlock of a lock never taken in this run
		}
		l.Threads = len(l.threads)
		l.Name = lockops.Name(syms, l.Addr, l.firstSite)
		if states[l.Addr].heldByAnyone() {
			rep.Unreleased++
		}
		rep.Locks = append(rep.Locks, l)
		rep.Total.add(&l.Counts)
	}
	for _, t := range threads {
		t.Locks = len(t.locks)
		if t.Requests > 0 {
			rep.Threads = append(rep.Threads, t)
		}
	}
	slices.SortFunc(rep.Locks, func(a, b *Lock) int {
		if c := cmp.Compare(o.Sort.value(&b.Counts), o.Sort.value(&a.Counts)); c != 0 {
			return c
		}
		return cmp.Compare(a.Addr, b.Addr)
	})
	slices.SortFunc(rep.Threads, func(a, b *Thread) int { return cmp.Compare(a.ID, b.ID) })
	if o.Top > 0 && len(rep.Locks) > o.Top {
		rep.Locks = rep.Locks[:o.Top]
	}
	return rep, nil
}

func (c *Counts) add(o *Counts) {
	c.Requests += o.Requests
	c.Acquired += o.Acquired
	c.Contended += o.Contended
	c.TryFailed += o.TryFailed
	c.TimedOut += o.TimedOut
	c.OwnerChanges += o.OwnerChanges
	c.WaitTotal += o.WaitTotal
	c.WaitMax = max(c.WaitMax, o.WaitMax)
	c.HoldTotal += o.HoldTotal
	c.HoldMax = max(c.HoldMax, o.HoldMax)
	c.Holds += o.Holds
}
