// Package profile is the function profiler: it aggregates a run's samples
// (package eventdb, kind sample) into self and total time per function,
// per guest thread, and a caller→callee graph, and writes them as text
// tables, JSON, or a pprof profile for `go tool pprof` and flame graphs.
// It reads the event DB and nothing else: functions are named with the
// symbol table the replay stored in the DB.
//
// A sample is the sampled code's address (the leaf) and the return
// addresses of its frame-pointer stack, innermost first. The leaf's
// function gets a "self" sample; every function on the stack, the leaf
// included, gets one "total" sample, once per sample however often it
// recurs.
package profile

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reprise-vm/reprise/eventdb"
)

// Options select the samples to profile. The zero value profiles every
// thread of the latest run that has samples.
type Options struct {
	// Run is the run to profile; 0 means the latest run that has samples.
	Run uint32
	// Thread, if set, keeps the samples of that guest thread only. It is a
	// pointer, as in eventdb.Query, because thread 0 (idle / kernel) is a
	// thread one may want alone.
	Thread *uint32
	// CallGraph also builds Profile.CallGraph.
	CallGraph bool
}

// ErrNoSamples means the run (or thread) selected has no samples.
var ErrNoSamples = errors.New("profile: no samples")

// Profile is a run's samples aggregated by function.
type Profile struct {
	Run      uint32  `json:"run"`
	Tape     string  `json:"tape"`
	Sampling string  `json:"sampling"`
	Thread   *uint32 `json:"thread,omitempty"` // the thread selected; nil: all
	Samples  uint64  `json:"samples"`

	// Functions are sorted by self samples, then total samples, then name.
	Functions []FuncStat `json:"functions"`
	// Threads are sorted by thread id; percentages in their Functions are
	// shares of that thread's samples.
	Threads []ThreadProfile `json:"threads"`
	// CallGraph is every caller→callee pair adjacent in a sampled stack,
	// sorted by samples; nil unless Options.CallGraph.
	CallGraph []Edge `json:"callgraph,omitempty"`

	// For WritePprof:
	created time.Time     // the run's creation
	span    time.Duration // the latest sample's record time
	attr    *attribution  // the distinct stacks and their functions
}

// FuncStat is one function's samples.
type FuncStat struct {
	Function string  `json:"function"`
	Self     uint64  `json:"self"`
	SelfPct  float64 `json:"self_pct"`
	Total    uint64  `json:"total"`
	TotalPct float64 `json:"total_pct"`
}

// ThreadProfile is one guest thread's share and its functions.
type ThreadProfile struct {
	Thread    uint32     `json:"thread"`
	Samples   uint64     `json:"samples"`
	Pct       float64    `json:"pct"` // of all the profile's samples
	Functions []FuncStat `json:"functions"`
}

// Edge is a call seen in the samples: Samples counts the samples whose
// stack has Caller directly above Callee (once per sample).
type Edge struct {
	Caller  string  `json:"caller"`
	Callee  string  `json:"callee"`
	Samples uint64  `json:"samples"`
	Pct     float64 `json:"pct"`
}

// Build profiles the samples o selects. It fails with an error wrapping
// eventdb.ErrNoRun for a run that does not exist, eventdb.ErrNoSymbols
// for a DB without a symbol table, and ErrNoSamples when there is
// nothing to profile.
func Build(db *eventdb.DB, o Options) (*Profile, error) {
	syms, err := db.Symbols()
	if err != nil {
		return nil, fmt.Errorf("profile: cannot name functions: %w", err)
	}
	run, err := chooseRun(db, o.Run)
	if err != nil {
		return nil, err
	}
	set, err := scan(db, run.ID, o.Thread)
	if err != nil {
		return nil, err
	}
	if set.samples == 0 {
		if o.Thread != nil {
			return nil, fmt.Errorf("%w: run %d has none of thread %d", ErrNoSamples, run.ID, *o.Thread)
		}
		return nil, fmt.Errorf("%w: run %d was replayed without sampling (replay with --sample N)", ErrNoSamples, run.ID)
	}
	p := &Profile{
		Run: run.ID, Tape: run.Tape, Sampling: run.Sampling, Thread: o.Thread, Samples: set.samples,
		created: run.Created, span: set.span, attr: newAttribution(syms, set.stacks),
	}
	p.attr.fill(p, o.CallGraph)
	return p, nil
}

// chooseRun returns run id, or with id 0 the latest run that has samples.
func chooseRun(db *eventdb.DB, id uint32) (eventdb.Run, error) {
	if id != 0 {
		run, err := db.Run(id)
		if err != nil {
			return eventdb.Run{}, fmt.Errorf("profile: %w", err)
		}
		return run, nil
	}
	runs, err := db.Runs()
	if err != nil {
		return eventdb.Run{}, fmt.Errorf("profile: list runs: %w", err)
	}
	for _, run := range slices.Backward(runs) {
		it := db.Query(eventdb.Query{Run: run.ID, Kinds: []eventdb.Kind{eventdb.KindSample}})
		found := it.Next()
		if err := it.Close(); err != nil {
			return eventdb.Run{}, fmt.Errorf("profile: look for samples in run %d: %w", run.ID, err)
		}
		if found {
			return run, nil
		}
	}
	return eventdb.Run{}, fmt.Errorf("%w: none of the DB's %d runs has samples (replay with --sample N)", ErrNoSamples, len(runs))
}

// Describe says what the profile covers, e.g. "run 2, all threads, 1234
// samples, sampled every 1009 user-mode basic blocks (deterministic)".
func (p *Profile) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %d, ", p.Run)
	if p.Thread != nil {
		fmt.Fprintf(&b, "thread %d, ", *p.Thread)
	} else {
		b.WriteString("all threads, ")
	}
	fmt.Fprintf(&b, "%d samples", p.Samples)
	if p.Sampling != "" {
		fmt.Fprintf(&b, ", sampled %s", p.Sampling)
	}
	return b.String()
}
