package states

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/tools/report"
)

// ErrNoHostView is returned by Load for a run whose recording kept no
// host view.
var ErrNoHostView = errors.New("the recording has no host view")

// ErrIncomplete is returned by Load for an incomplete run (its replay
// stopped early) without a host view: the replay stores it at the end.
var ErrIncomplete = errors.New("the run is incomplete: its replay stopped before it stored the host view")

// Load rebuilds a run's states from db; run 0 means the latest complete
// run with a host view (eventdb.DB.ChooseRun).
func Load(db *eventdb.DB, run uint32) (*Run, error) {
	choice, err := db.ChooseRun(run, func(r *eventdb.Run) error {
		_, err := hostView(db, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	rec := &choice.Run
	run = rec.ID
	host, err := hostView(db, rec)
	if err != nil {
		return nil, fmt.Errorf("run %d: %w", run, err)
	}
	r := &Run{
		ID:      run,
		Note:    report.NoteOf(&choice),
		Name:    strings.TrimSuffix(filepath.Base(rec.Tape), filepath.Ext(rec.Tape)),
		Sched:   host.Sched,
		Missing: host.Missing,
		Threads: map[uint32]*Thread{},
		CPUs:    map[uint32][]HostSlice{},
		comms:   map[uint32]string{},
		start:   host.Start,
	}
	for _, t := range host.Threads {
		r.comms[t.TID] = t.Comm
	}
	for _, c := range host.VCPUs {
		v, err := loadVCPU(db, run, c)
		if err != nil {
			return nil, err
		}
		r.VCPUs = append(r.VCPUs, v)
	}
	if r.Sched {
		if err := r.loadSched(db, run); err != nil {
			return nil, err
		}
	}
	for _, v := range r.VCPUs {
		if n := len(v.Intervals); n > 0 {
			if r.Span == (Span{}) || v.Intervals[0].Start < r.Span.Start {
				r.Span.Start = v.Intervals[0].Start
			}
			r.Span.End = max(r.Span.End, v.Intervals[n-1].End)
		}
	}
	if err := r.loadThreads(db, run); err != nil {
		return nil, err
	}
	if err := r.loadConns(db, run); err != nil {
		return nil, err
	}
	return r, nil
}

// hostView returns run's host view, or why it has none.
func hostView(db *eventdb.DB, run *eventdb.Run) (*eventdb.Host, error) {
	host, err := db.Host(run.ID)
	switch {
	case errors.Is(err, eventdb.ErrNoHost) && !run.Complete:
		return nil, ErrIncomplete
	case errors.Is(err, eventdb.ErrNoHost):
		return nil, fmt.Errorf("%w (it was replayed by a reprise without host views: replay the tape again)", ErrNoHostView)
	case err != nil:
		return nil, err
	case len(host.VCPUs) == 0:
		return nil, fmt.Errorf("%w: %s", ErrNoHostView, host.Missing)
	}
	return host, nil
}

// Align moves r onto ref's time line, through their host views' common
// CLOCK_MONOTONIC: both must have been recorded on one host.
func (r *Run) Align(ref *Run) {
	d := r.start - ref.start
	if d == 0 {
		return
	}
	shift := func(s *Span) { s.Start += d; s.End += d }
	shift(&r.Span)
	for _, v := range r.VCPUs {
		for i := range v.Intervals {
			shift(&v.Intervals[i].Span)
		}
	}
	for i := range r.Current {
		shift(&r.Current[i].Span)
	}
	for _, th := range r.Threads {
		for i := range th.Intervals {
			shift(&th.Intervals[i].Span)
		}
	}
	for _, ss := range r.CPUs {
		for i := range ss {
			shift(&ss[i].Span)
		}
	}
	for _, c := range r.Conns {
		shift(&c.Span)
		for i := range c.Exchanges {
			shift(&c.Exchanges[i].Span)
		}
	}
}
