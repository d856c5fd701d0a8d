// Package lockops rebuilds lock operations from a run's probe events: who
// asked for which lock, got it or not, and released it, in execution
// order. The lock tools (lockstat, deadlock) read runs through it.
//
// A run's probes play roles by name (the guest kit's set is
// guest.LockProbes, the C library's PthreadProbes; another lock API is
// probed under these names). A name may carry a suffix after a dot
// (condwait.timed) to probe a second function in the same role.
//
//	lock        entry of a blocking lock    first argument: the lock's address
//	locked      its return                  (the lock was acquired)
//	unlock      entry of unlock             first argument: the lock's address
//	trylock     entry of a try-lock         first argument: the lock's address
//	trylocked   its return                  first argument: the return value, 0 = acquired
//	timedlock   entry of a timed lock       first argument: the lock's address
//	timedlocked its return                  first argument: the return value, 0 = acquired
//
// Reader-writer locks, whose read acquisitions share the lock:
//
//	rdlock, wrlock             entries           first argument: the lock's address
//	rdlocked, wrlocked         their returns     (acquired)
//	tryrdlock, trywrlock       entries           first argument: the lock's address
//	tryrdlocked, trywrlocked   their returns     first argument: the return value, 0 = acquired
//	rwunlock                   entry of unlock   first argument: the lock's address
//
// Condition-variable waits release their mutex and take it again:
//
//	condwait    entry of the wait           first argument: the mutex's address
//	condwaited  its return                  (the mutex is held again)
//
// lock, locked and unlock are required; the others are used when present.
// A request made while the thread already waits for the same lock (a lock
// function calling another: musl's pthread_mutex_lock calls its timed
// lock) is part of the outer one and makes no operation of its own.
package lockops

import (
	"errors"
	"fmt"
	"strings"
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
	ProbeRdlock      = "rdlock"
	ProbeRdlocked    = "rdlocked"
	ProbeWrlock      = "wrlock"
	ProbeWrlocked    = "wrlocked"
	ProbeTryRdlock   = "tryrdlock"
	ProbeTryRdlocked = "tryrdlocked"
	ProbeTryWrlock   = "trywrlock"
	ProbeTryWrlocked = "trywrlocked"
	ProbeRWUnlock    = "rwunlock"
	ProbeCondWait    = "condwait"
	ProbeCondWaited  = "condwaited"
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
	Kind Kind
	Mode Mode
	// RW says the lock is a reader-writer lock; Shared, that this is a
	// read acquisition (or its request, or its release).
	RW, Shared bool
	Lock       uint64 // the lock's guest address
	Thread     uint32
	Pos        eventdb.Position
	Time       time.Duration // record time
	Site       uint64        // Acquired and Failed: the return address in the caller
}

// roles maps a run's probe ids to what they mean.
type roles map[uint32]role

type role struct {
	kind   Kind // Request (entry), Acquired (return), Release
	mode   Mode
	rw     bool // a reader-writer lock's
	shared bool // a read lock's
	cond   bool // a condition wait's: Release at entry, Acquired at return
}

// family says which entries a return completes.
func (r role) family() role { return role{mode: r.mode, rw: r.rw, shared: r.shared, cond: r.cond} }

// ErrNoLockProbes says a run has no lock probes to read.
var ErrNoLockProbes = errors.New("the run has no lock probes (replay with --locks, or probes named lock, locked and unlock)")

// roleNames are the roles by probe name.
var roleNames = map[string]role{
	ProbeLock:        {kind: Request},
	ProbeLocked:      {kind: Acquired},
	ProbeUnlock:      {kind: Release},
	ProbeTrylock:     {kind: Request, mode: Try},
	ProbeTrylocked:   {kind: Acquired, mode: Try},
	ProbeTimedlock:   {kind: Request, mode: Timed},
	ProbeTimedlocked: {kind: Acquired, mode: Timed},
	ProbeRdlock:      {kind: Request, rw: true, shared: true},
	ProbeRdlocked:    {kind: Acquired, rw: true, shared: true},
	ProbeWrlock:      {kind: Request, rw: true},
	ProbeWrlocked:    {kind: Acquired, rw: true},
	ProbeTryRdlock:   {kind: Request, mode: Try, rw: true, shared: true},
	ProbeTryRdlocked: {kind: Acquired, mode: Try, rw: true, shared: true},
	ProbeTryWrlock:   {kind: Request, mode: Try, rw: true},
	ProbeTryWrlocked: {kind: Acquired, mode: Try, rw: true},
	ProbeRWUnlock:    {kind: Release, rw: true},
	ProbeCondWait:    {kind: Release, cond: true},
	ProbeCondWaited:  {kind: Acquired, cond: true},
}

func runRoles(run *eventdb.Run) (roles, error) {
	r := roles{}
	names := map[string]bool{}
	for _, p := range run.Probes {
		base, _, _ := strings.Cut(p.Name, ".")
		ro, ok := roleNames[base]
		if !ok {
			continue
		}
		entry := ro.kind != Acquired
		if entry && len(p.Args) == 0 {
			return nil, fmt.Errorf("probe %s names no argument: its first argument must be the lock's address (e.g. %s=mutex_lock m=arg0)", p.Name, p.Name)
		}
		if !entry && ro.mode != Blocking && len(p.Args) == 0 {
			return nil, fmt.Errorf("probe %s names no argument: its first argument must be the return value (e.g. ret=rax)", p.Name)
		}
		r[p.ID] = ro
		names[base] = true
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
	// Each thread's requests in progress, innermost last: a lock
	// function may call another for the same lock.
	type pending struct {
		lock   uint64
		role   role
		nested bool // inside a request for the same lock: makes no operation
	}
	waiting := map[uint32][]pending{}
	it := db.Merged(eventdb.Query{Run: run.ID, Kinds: []eventdb.Kind{eventdb.KindProbeEntry, eventdb.KindProbeReturn}})
	var op Op
	emit := func() error {
		if err := fn(&op); err != nil {
			_ = it.Close()
			return err
		}
		return nil
	}
	for it.Next() {
		e := it.Event()
		r, ok := ro[e.Probe]
		if !ok {
			continue
		}
		op = Op{Kind: r.kind, Mode: r.mode, RW: r.rw, Shared: r.shared, Thread: e.Thread, Pos: e.Pos, Time: e.Time}
		stack := waiting[e.Thread]
		switch {
		case r.kind == Release && !r.cond:
			if len(e.Args) == 0 {
				continue
			}
			op.Lock = e.Args[0]
		case r.kind == Request || r.cond && r.kind == Release:
			if len(e.Args) == 0 {
				continue
			}
			op.Lock = e.Args[0]
			nested := len(stack) > 0 && stack[len(stack)-1].lock == op.Lock
			waiting[e.Thread] = append(stack, pending{lock: op.Lock, role: r, nested: nested})
			if nested {
				continue
			}
		case r.kind == Acquired:
			// Requests whose returns never came (a longjmp past them)
			// are dropped on the way to this one's.
			for len(stack) > 0 && stack[len(stack)-1].role.family() != r.family() {
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 {
				waiting[e.Thread] = stack
				continue
			}
			p := stack[len(stack)-1]
			waiting[e.Thread] = stack[:len(stack)-1]
			if p.nested {
				continue
			}
			op.Lock, op.Site = p.lock, e.Addr
			if r.cond {
				// The wait took the mutex again: a request and its
				// acquisition, now.
				op.Kind, op.Mode = Request, Blocking
				if err := emit(); err != nil {
					return err
				}
				op.Kind = Acquired
			} else if r.mode != Blocking && (len(e.Args) == 0 || uint32(e.Args[0]) != 0) {
				op.Kind = Failed
			}
		}
		if err := emit(); err != nil {
			return err
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("run %d: %w", run.ID, err)
	}
	return nil
}

// Name names the lock at addr for reports: the data symbol that holds it
// ("counter_lock", "stats+0x28"); else the file whose image holds it
// ("libsqlite3.so.0+0x12aa0": a static lock whose symbol is stripped);
// else, on the heap or a stack, the call site of its first acquisition
// ("heap@worker+0x73").
func Name(syms *eventdb.Symbols, addr, firstSite uint64) string {
	if s, _, ok := syms.Resolve(addr); ok && s.Size != 0 {
		return syms.Describe(addr)
	}
	if _, ok := syms.ObjectAt(addr); ok {
		return syms.Describe(addr)
	}
	if firstSite == 0 {
		return fmt.Sprintf("%#x", addr)
	}
	return "heap@" + syms.Describe(firstSite)
}
