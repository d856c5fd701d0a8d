package main

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/replayer"
)

func newMergeCmd() *cobra.Command {
	var output, ckptFile string
	cmd := &cobra.Command{
		Use:   "merge -o DB SEGMENT-DB...",
		Short: "Join the event databases of a replay's segments into one run",
		Long: `Join the DBs that reprise replay --segment I/N wrote, one per share, into
one run of DB: the run a replay of the whole tape from boot stores. Every
share must be there, each a complete run (their notes say which segments
they hold), in any order, all of the same tape (by its content), split at
the same checkpoints, with the same probes and sampling. The tape must be
where the shares replayed it, and its checkpoints at TAPE.ckpt or
--checkpoints: merge checks the shares against them.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output == "" {
				return &exitError{exitUsage, errors.New("merge needs -o DB")}
			}
			var shares []share
			defer func() {
				for _, s := range shares {
					s.db.Close()
				}
			}()
			for _, dir := range args {
				db, err := openDB(dir)
				if err != nil {
					return err
				}
				s, err := shareOf(db, dir)
				if err != nil {
					db.Close()
					return &exitError{exitUsage, err}
				}
				shares = append(shares, s)
			}
			slices.SortFunc(shares, func(a, b share) int { return a.From - b.From })
			if err := coverage(shares, ckptFile); err != nil {
				return &exitError{exitUsage, err}
			}
			created, err := claimDBDir(output)
			if err != nil {
				return err
			}
			out, err := eventdb.Open(output, nil)
			if err != nil {
				return &exitError{exitFailure, dbError(output, err)}
			}
			merged := false
			defer func() {
				out.Close()
				if created && !merged {
					os.RemoveAll(output) // made for a merge that stored nothing
				}
			}()
			run, err := replayer.Merge(out, shares[0].run.Tape, func(yield func(replayer.Part, error) bool) {
				for _, s := range shares {
					if !yield(replayer.Part{DB: s.db, Run: &s.run, Last: s.To == s.Split.Segments}, nil) {
						return
					}
				}
			})
			merged = run != nil // an incomplete run is kept, marked so
			if err != nil {
				return &exitError{exitFailure, err}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "reprise: run %d in %s: %d events, from %d shares\n", run.ID, output, run.Events, len(shares))
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "event database to add the joined run to (created if absent; never a directory of other files)")
	cmd.Flags().StringVar(&ckptFile, "checkpoints", "", "the tape's checkpoint file the shares were split at (default: TAPE.ckpt)")
	return cmd
}

// share is one DB of a split replay: its run and the segments it holds.
type share struct {
	db  *eventdb.DB
	dir string
	run eventdb.Run
	replayer.SegmentNote
}

// shareOf finds the latest complete run of a share's DB and the segments
// its note says it holds.
func shareOf(db *eventdb.DB, dir string) (share, error) {
	s := share{db: db, dir: dir}
	runs, err := db.Runs()
	if err != nil {
		return s, err
	}
	var why error
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		if !r.Complete {
			continue
		}
		n, err := replayer.ParseSegmentNote(r.Note)
		if err != nil {
			why = err
			continue
		}
		s.run, s.SegmentNote = r, n
		return s, nil
	}
	if why != nil {
		return s, fmt.Errorf("%s holds no complete run of a replay's segments (reprise replay --segment I/N writes one): %w", dir, why)
	}
	return s, fmt.Errorf("%s holds no complete run of a replay's segments (reprise replay --segment I/N writes one)", dir)
}

// coverage checks that shares, in order, are the shares of one split
// replay of the tape they name, as it is now, at the checkpoints in
// ckptFile (default TAPE.ckpt): their notes say so, and notes are
// checked, not trusted — the tape's content and the checkpoints' list
// must hash to what every note names, the probes and sampling must be
// the same, the segments must follow one
// another from the first to the last, and only the share that read the
// tape to its end holds a host view.
func coverage(shares []share, ckptFile string) error {
	first := shares[0]
	tp := first.run.Tape
	if ckptFile == "" {
		ckptFile = tp + ".ckpt"
	}
	next := 1
	for _, s := range shares {
		switch {
		case s.run.Tape != tp || s.Split != first.Split:
			return fmt.Errorf("%s is a share of another split replay (%s, tape sha256 %x…) than %s (%s, tape sha256 %x…)",
				s.dir, s.run.Tape, s.Split.Tape[:6], first.dir, tp, first.Split.Tape[:6])
		case replayer.SameOptions(&first.run, &s.run) != nil:
			return fmt.Errorf("%s replayed with other probes or sampling than %s: %w", s.dir, first.dir, replayer.SameOptions(&first.run, &s.run))
		case s.From != next:
			return fmt.Errorf("the shares do not cover the %d segments of %s one after the other: segments %d to %d follow segment %d",
				first.Split.Segments, tp, s.From, s.To, next-1)
		}
		_, err := s.db.Host(s.run.ID)
		switch last := s.To == s.Split.Segments; {
		case last && err != nil:
			return fmt.Errorf("%s: its run %d claims the last segment but holds no host view, which the replay of the last segment stores: %w", s.dir, s.run.ID, err)
		case !last && err == nil:
			return fmt.Errorf("%s: its run %d holds a host view, which only the last segment's replay stores, but claims segments %d to %d of %d", s.dir, s.run.ID, s.From, s.To, s.Split.Segments)
		}
		next = s.To + 1
	}
	if next-1 != first.Split.Segments {
		return fmt.Errorf("segments %d to %d of %s are missing", next, first.Split.Segments, tp)
	}
	rec, err := replayer.OpenRecording(tp)
	if err != nil {
		return fmt.Errorf("checking the shares against their tape: %w", err)
	}
	defer rec.Close()
	split, err := replayer.SplitOf(rec, ckptFile)
	if err != nil {
		return fmt.Errorf("checking the shares against their tape: %w", err)
	}
	switch {
	case split.Tape != first.Split.Tape:
		return fmt.Errorf("the shares replayed another tape (sha256 %x…) than the one at %s now (sha256 %x…)", first.Split.Tape[:6], tp, split.Tape[:6])
	case split != first.Split:
		return fmt.Errorf("the shares split the replay at other checkpoints (%d segments) than %s holds (%d segments)", first.Split.Segments, ckptFile, split.Segments)
	}
	return nil
}
