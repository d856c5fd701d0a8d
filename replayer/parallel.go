package replayer

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sync"

	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/eventdb"
)

// A tape whose replay has checkpoints splits into segments: boot to the
// first checkpoint, each checkpoint to the next, the last to the end.
// Each segment replays on its own machine — on another core, or another
// host — from its first checkpoint, and is checked at its last, so the
// segments together are checked as a replay from boot is.

// Segments is how many segments the checkpoint file of o splits the
// replay into.
func Segments(o Options) (int, error) {
	h, err := TapeHeader(o.Tape)
	if err != nil {
		return 0, err
	}
	f, err := checkpoint.Open(o.Checkpoints, checkpoint.RecordingOf(h))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return len(f.Checkpoints()) + 1, nil
}

// Group is the segments [From, To) that worker i of n replays: n
// consecutive groups of nearly equal numbers of segments.
func Group(segments, i, n int) (from, to int) {
	return segments * i / n, segments * (i + 1) / n
}

// SegmentsToDB replays segments [from, to) of o's tape into db as one
// run, each segment after the other (a worker's share of a split
// replay). The run's note says which segments it holds.
func SegmentsToDB(ctx context.Context, o Options, db *eventdb.DB, from, to, total int) (*Result, *eventdb.Run, error) {
	if from < 0 || to > total || from >= to {
		return nil, nil, fmt.Errorf("replayer: segments [%d, %d) of %d", from, to, total)
	}
	o.Start, o.Until = from, to
	if to == total {
		o.Until = 0 // the last segment runs to the end
	}
	res, run, err := ToDB(ctx, o, db)
	if err != nil {
		return res, run, err
	}
	return res, run, db.SetNote(run.ID, fmt.Sprintf("segments %d to %d of %d", from+1, to, total))
}

// ParallelToDB replays o's tape into db as one run by replaying its
// segments on `jobs` machines at once, each into a scratch DB, and then
// merging their runs in order: the run holds the events a replay from
// boot would store, in its arrival order (host-view records, which a
// replay stores as it reads the tape, come with the last segment's).
func ParallelToDB(ctx context.Context, o Options, db *eventdb.DB, jobs int) (*Result, *eventdb.Run, error) {
	total, err := Segments(o)
	if err != nil {
		return nil, nil, err
	}
	jobs = max(1, min(jobs, total))
	dir, err := os.MkdirTemp("", "reprise-segments")
	if err != nil {
		return nil, nil, fmt.Errorf("replayer: %w", err)
	}
	defer os.RemoveAll(dir)
	type part struct {
		db  *eventdb.DB
		run *eventdb.Run
		res *Result
		err error
	}
	parts := make([]part, total)
	work := make(chan int)
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range work {
				p := &parts[s]
				if p.db, p.err = eventdb.Open(filepath.Join(dir, fmt.Sprint(s)), nil); p.err != nil {
					continue
				}
				so := o
				so.Console, so.Progress = nil, nil
				if s == total-1 {
					so.Console = o.Console // the last segment's output is the end of the recording's
				}
				p.res, p.run, p.err = SegmentsToDB(ctx, so, p.db, s, s+1, total)
			}
		}()
	}
	for s := range total {
		work <- s
	}
	close(work)
	wg.Wait()
	defer func() {
		for _, p := range parts {
			if p.db != nil {
				p.db.Close()
			}
		}
	}()
	var errs []error
	for s, p := range parts {
		if p.err != nil {
			errs = append(errs, fmt.Errorf("segment %d: %w", s+1, p.err))
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	run, err := Merge(db, o.Tape, parts[total-1].db, func(yield func(*eventdb.DB, *eventdb.Run) bool) {
		for _, p := range parts {
			if !yield(p.db, p.run) {
				return
			}
		}
	})
	last := parts[total-1].res
	return last, run, err
}

// Merge stores the runs parts yields — the segments of one replay, in
// order, each a complete run of its DB — in db as one run: their events
// in arrival order, the symbols, and the host view of host's last run
// (the part that read the tape to its end). The run is complete when
// every part was.
func Merge(db *eventdb.DB, tape string, host *eventdb.DB, parts iter.Seq2[*eventdb.DB, *eventdb.Run]) (*eventdb.Run, error) {
	var in *eventdb.Ingest
	var run *eventdb.Run
	var last *eventdb.Run
	defer func() {
		if in != nil {
			in.Close()
		}
	}()
	for src, r := range parts {
		if !r.Complete {
			return nil, fmt.Errorf("replayer: merge: run %d of a part is incomplete", r.ID)
		}
		if in == nil {
			syms, err := src.Symbols()
			if err != nil {
				return nil, fmt.Errorf("replayer: merge: %w", err)
			}
			if err := db.SetSymbols(syms); err != nil {
				return nil, err
			}
			abs, _ := filepath.Abs(tape)
			if run, in, err = db.NewRun(abs, r.Probes, r.Sampling); err != nil {
				return nil, err
			}
		}
		it := src.Merged(eventdb.Query{Run: r.ID})
		for it.Next() {
			if err := in.Add(it.Event().Clone()); err != nil {
				_ = it.Close()
				return nil, err
			}
		}
		if err := it.Close(); err != nil {
			return nil, fmt.Errorf("replayer: merge: %w", err)
		}
		last = r
	}
	if in == nil {
		return nil, errors.New("replayer: merge: no part to merge")
	}
	if h, err := host.Host(last.ID); err == nil {
		if err := db.SetHost(run.ID, h); err != nil {
			return nil, err
		}
	}
	if err := in.Finish(); err != nil {
		return nil, err
	}
	final, err := db.Run(run.ID)
	if err != nil {
		return nil, err
	}
	return &final, nil
}
