package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/replayer"
)

func newMergeCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "merge -o DB SEGMENT-DB...",
		Short: "Join the event databases of a replay's segments into one run",
		Long: `Join the DBs that reprise replay --segment I/N wrote, one per share, into
one run of DB: the run a replay of the whole tape from boot stores. Every
share must be there, each a complete run (their notes say which segments
they hold), in any order.`,
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
			slices.SortFunc(shares, func(a, b share) int { return a.from - b.from })
			next := 1
			for _, s := range shares {
				if s.from != next || s.total != shares[0].total || s.run.Tape != shares[0].run.Tape {
					return &exitError{exitUsage, fmt.Errorf("the shares do not cover the %d segments of %s one after the other: segments %d to %d follow segment %d",
						shares[0].total, shares[0].run.Tape, s.from, s.to, next-1)}
				}
				next = s.to + 1
			}
			if next-1 != shares[0].total {
				return &exitError{exitUsage, fmt.Errorf("segments %d to %d of %s are missing", next, shares[0].total, shares[0].run.Tape)}
			}
			out, err := eventdb.Open(output, nil)
			if err != nil {
				return &exitError{exitFailure, dbError(output, err)}
			}
			defer out.Close()
			run, err := replayer.Merge(out, shares[0].run.Tape, func(yield func(replayer.Part, error) bool) {
				for _, s := range shares {
					if !yield(replayer.Part{DB: s.db, Run: &s.run, Last: s.to == s.total}, nil) {
						return
					}
				}
			})
			if err != nil {
				return &exitError{exitFailure, err}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "reprise: run %d in %s: %d events, from %d shares\n", run.ID, output, run.Events, len(shares))
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "event database to add the joined run to (created if absent)")
	return cmd
}

// share is one DB of a split replay: its run and the segments it holds
// (1-based, inclusive).
type share struct {
	db              *eventdb.DB
	run             eventdb.Run
	from, to, total int
}

// shareOf finds the latest complete run of a share's DB and the segments
// its note says it holds.
func shareOf(db *eventdb.DB, dir string) (share, error) {
	s := share{db: db}
	runs, err := db.Runs()
	if err != nil {
		return s, err
	}
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		if !r.Complete {
			continue
		}
		if n, _ := fmt.Sscanf(r.Note, "segments %d to %d of %d", &s.from, &s.to, &s.total); n == 3 {
			s.run = r
			return s, nil
		}
	}
	return s, fmt.Errorf("%s holds no complete run of a replay's segments (reprise replay --segment I/N writes one)", dir)
}
