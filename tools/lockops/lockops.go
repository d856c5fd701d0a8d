// Package lockops rebuilds lock operations from a run's probe events: who
// asked for which lock, got it or not, and released it, in execution
// order. The lock tools (lockstat, deadlock) read runs through it.
//
// A run's probes play roles by name (the guest kit's set is
// guest.LockProbes; another guest's lock API is probed under these names):
//
//	lock        entry of a blocking lock    first argument: the lock's address
//	locked      its return                  (the lock was acquired)
//	unlock      entry of unlock             first argument: the lock's address
//	trylock     entry of a try-lock         first argument: the lock's address
//	trylocked   its return                  first argument: the return value, 0 = acquired
//	timedlock   entry of a timed lock       first argument: the lock's address
//	timedlocked its return                  first argument: the return value, 0 = acquired
//
// lock, locked and unlock are required; the others are used when present.
package lockops

import (
	"errors"
	"fmt"
	"time"

	"github.com/reprise-vm/reprise/eventdb"
)

// Probe names, by role.
const (
	ProbeLock        = "lock"
	ProbeLocked      = "locked"
	ProbeUnlock      = "unlock"
	ProbeTrylock     = "trylock"
	ProbeTrylocked   = "trylocked"
	ProbeTimedlock   = "timedlock"
	ProbeTimedlocked = "timedlocked"
)

// Kind is what a lock operation did.
type Kind uint8

const (
	Request  Kind = iota + 1 // the thread asked for the lock
	Acquired                 // it got it
	Failed                   // a try or timed lock returned without it
	Release                  // it released it
)

func (k Kind) String() string {
	switch k {
	case Request:
		return "request"
	case Acquired:
		return "acquired"
	case Failed:
		return "failed"
	case Release:
		return "release"
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Mode is how a lock was asked for.
type Mode uint8

const (
	Blocking Mode = iota
	Try
	Timed
)

func (m Mode) String() string {
	switch m {
	case Try:
		return "trylock"
	case Timed:
		return "timedlock"
	}
	return "lock"
}

// Op is one lock operation.
type Op struct {
	Kind   Kind
	Mode   Mode
	Lock   uint64 // the lock's guest address
	Thread uint32
	Pos    eventdb.Position
	Time   time.Duration // record time
	Site   uint64        // Acquired and Failed: the return address in the caller
}

// roles maps a run's probe ids to what they mean.
type roles map[uint32]role

type role struct {
	kind Kind // Request (entry), Acquired (return), Release
	mode Mode
}

// ErrNoLockProbes says a run has no lock probes to read.
var ErrNoLockProbes = errors.New("the run has no lock probes (replay with --locks, or probes named lock, locked and unlock)")

func runRoles(run *eventdb.Run) (roles, error) {
	r := roles{}
	names := map[string]bool{}
	for _, p := range run.Probes {
		var ro role
		switch p.Name {
		case ProbeLock:
			ro = role{Request, Blocking}
		case ProbeLocked:
			ro = role{Acquired, Blocking}
		case ProbeUnlock:
			ro = role{Release, Blocking}
		case ProbeTrylock:
			ro = role{Request, Try}
		case ProbeTrylocked:
			ro = role{Acquired, Try}
		case ProbeTimedlock:
			ro = role{Request, Timed}
		case ProbeTimedlocked:
			ro = role{Acquired, Timed}
		default:
			continue
		}
		if ro.kind != Acquired && len(p.Args) == 0 {
			return nil, fmt.Errorf("probe %s names no argument: its first argument must be the lock's address (e.g. %s=mutex_lock m=arg0)", p.Name, p.Name)
		}
		if ro.kind == Acquired && ro.mode != Blocking && len(p.Args) == 0 {
			return nil, fmt.Errorf("probe %s names no argument: its first argument must be the return value (e.g. ret=rax)", p.Name)
		}
		r[p.ID] = ro
		names[p.Name] = true
	}
	if !names[ProbeLock] || !names[ProbeLocked] || !names[ProbeUnlock] {
		return nil, ErrNoLockProbes
	}
	return r, nil
}

// CheckRun says whether run has the lock probes Scan reads: nil if it
// has, otherwise why not. The lock tools choose their run with it
// (eventdb.DB.ChooseRun).
func CheckRun(run *eventdb.Run) error {
	_, err := runRoles(run)
	return err
}

// Scan calls fn with run's lock operations in execution order. A return
// without its entry (a replay cut short, a probe set without the entry)
// is skipped; fn's Op is reused between calls.
func Scan(db *eventdb.DB, run *eventdb.Run, fn func(op *Op) error) error {
	ro, err := runRoles(run)
	if err != nil {
		return fmt.Errorf("run %d: %w", run.ID, err)
	}
	type pending struct {
		lock uint64
		mode Mode
	}
	waiting := map[uint32]pending{} // thread → its lock request in progress
	it := db.Merged(eventdb.Query{Run: run.ID, Kinds: []eventdb.Kind{eventdb.KindProbeEntry, eventdb.KindProbeReturn}})
	var op Op
	for it.Next() {
		e := it.Event()
		r, ok := ro[e.Probe]
		if !ok {
			continue
		}
		op = Op{Kind: r.kind, Mode: r.mode, Thread: e.Thread, Pos: e.Pos, Time: e.Time}
		switch r.kind {
		case Request, Release:
			if len(e.Args) == 0 {
				continue
			}
			op.Lock = e.Args[0]
			if r.kind == Request {
				waiting[e.Thread] = pending{op.Lock, r.mode}
			}
		case Acquired:
			p, ok := waiting[e.Thread]
			if !ok || p.mode != r.mode {
				continue
			}
			delete(waiting, e.Thread)
			op.Lock, op.Site = p.lock, e.Addr
			if r.mode != Blocking && (len(e.Args) == 0 || uint32(e.Args[0]) != 0) {
				op.Kind = Failed
			}
		}
		if err := fn(&op); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("run %d: %w", run.ID, err)
	}
	return nil
}
