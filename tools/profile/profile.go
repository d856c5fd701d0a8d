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
	"strings"
	"time"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/tools/report"
)

// Options select the samples to profile. The zero value profiles every
// thread of the latest complete run that has samples.
type Options struct {
	// Run is the run to profile; 0 means the latest complete run that has
	// samples (eventdb.DB.ChooseRun).
	Run uint32
	// Thread, if set, keeps the samples of that guest thread only. It is a
	// pointer, as in eventdb.Query, because thread 0 (idle / kernel) is a
	// thread one may want alone.
	Thread *uint32
	// CallGraph also builds Profile.CallGraph.
	CallGraph bool
	// User leaves out the samples taken while the VMM served the program
	// (its system calls and faults: eventdb.SampleSystem), as perf's
	// cpu-clock:u samples user mode only.
	User bool
}

// ErrNoSamples means the run (or thread) selected has no samples.
var ErrNoSamples = errors.New("profile: no samples")

// Profile is a run's samples aggregated by function.
type Profile struct {
	Run uint32 `json:"run"`
	// Whether the run is incomplete, or newer incomplete runs were skipped.
	report.RunNote
	Tape     string  `json:"tape"`
	Sampling string  `json:"sampling"`
	Thread   *uint32 `json:"thread,omitempty"` // the thread selected; nil: all
	Samples  uint64  `json:"samples"`
	// System counts the samples taken while the VMM served the program
	// (in Samples, unless Options.User left them out: then Samples
	// counts the rest).
	System uint64 `json:"system_samples"`
	User   bool   `json:"user_only,omitempty"`
	// Weighted: the percentages are shares of estimated time, each
	// deterministic sample weighing the cycles it stands for
	// (eventdb.SampleCost); otherwise they are shares of samples.
	Weighted bool `json:"weighted,omitempty"`

	// Functions are sorted by self share, then total share, then name.
	Functions []FuncStat `json:"functions"`
	// Files are, for a Linux program, the files the samples were in (as
	// perf's --sort dso), by self share, then path; "[unknown]" holds
	// the samples in no file.
	Files []FileStat `json:"files,omitempty"`
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

// FuncStat is one function's samples and, in percent, its share of the
// profile's time (Profile.Weighted) or samples.
type FuncStat struct {
	Function string  `json:"function"`
	Self     uint64  `json:"self"`
	SelfPct  float64 `json:"self_pct"`
	Total    uint64  `json:"total"`
	TotalPct float64 `json:"total_pct"`
}

// FileStat is the samples whose sampled code was in one file.
type FileStat struct {
	File    string  `json:"file"` // its path
	Self    uint64  `json:"self"`
	SelfPct float64 `json:"self_pct"`
}

// ThreadProfile is one guest thread's share and its functions.
type ThreadProfile struct {
	Thread    uint32     `json:"thread"`
	Samples   uint64     `json:"samples"`
	Pct       float64    `json:"pct"` // of all the profile's time or samples
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
// for a DB without a symbol table, ErrNoSamples when the run named (or
// its thread) has no samples, and eventdb.ErrNoSuitableRun when no
// complete run has any.
func Build(db *eventdb.DB, o Options) (*Profile, error) {
	syms, err := db.Symbols()
	if err != nil {
		return nil, fmt.Errorf("profile: cannot name functions: %w", err)
	}
	choice, err := db.ChooseRun(o.Run, sampled(db))
	if err != nil {
		return nil, err
	}
	run := &choice.Run
	set, err := scan(db, run.ID, o.Thread, o.User)
	if err != nil {
		return nil, err
	}
	if set.samples == 0 { // the run has samples, but not of this thread
		return nil, fmt.Errorf("%w: run %d has none of thread %d", ErrNoSamples, run.ID, *o.Thread)
	}
	p := &Profile{
		Run: run.ID, RunNote: report.NoteOf(&choice), Tape: run.Tape, Sampling: run.Sampling, Thread: o.Thread, Samples: set.samples, System: set.system, User: o.User,
		created: run.Created, span: set.span, attr: newAttribution(syms, set),
	}
	p.Weighted = p.attr.weighted()
	p.attr.fill(p, o.CallGraph)
	return p, nil
}

// sampled says whether a run has samples to profile (the suits of
// eventdb.DB.ChooseRun).
func sampled(db *eventdb.DB) func(*eventdb.Run) error {
	return func(run *eventdb.Run) error {
		it := db.Query(eventdb.Query{Run: run.ID, Kinds: []eventdb.Kind{eventdb.KindSample}})
		found := it.Next()
		if err := it.Close(); err != nil {
			return fmt.Errorf("look for samples: %w", err)
		}
		switch {
		case found:
			return nil
		case run.Sampling == "":
			return fmt.Errorf("%w: replayed without sampling (replay with --sample N)", ErrNoSamples)
		case !run.Complete:
			return fmt.Errorf("%w: the run is incomplete, its replay stopped before it stored one", ErrNoSamples)
		}
		return ErrNoSamples
	}
}

// Describe says what the profile covers, e.g. "run 2, all threads, 1234
// samples, sampled every 1009 user-mode branch counts (deterministic)".
func (p *Profile) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %d, ", p.Run)
	if p.Thread != nil {
		fmt.Fprintf(&b, "thread %d, ", *p.Thread)
	} else {
		b.WriteString("all threads, ")
	}
	fmt.Fprintf(&b, "%d samples", p.Samples)
	switch {
	case p.User:
		fmt.Fprintf(&b, " in user mode (%d in the VMM left out)", p.System)
	case p.System > 0:
		fmt.Fprintf(&b, " (%d in the VMM: system calls and faults)", p.System)
	}
	if p.Sampling != "" {
		fmt.Fprintf(&b, ", sampled %s", p.Sampling)
	}
	if p.Weighted {
		b.WriteString(", weighted by the estimated cycles each sample stands for")
	}
	return b.String()
}
