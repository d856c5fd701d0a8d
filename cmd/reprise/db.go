package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/tools/report"
)

// openDB opens an event DB for a tool: read-only, so a mistyped or
// unrelated directory is refused rather than made into an empty DB.
func openDB(dir string) (*eventdb.DB, error) {
	db, err := eventdb.Open(dir, &eventdb.Options{ReadOnly: true})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, eventdb.ErrNotDB):
		return nil, &exitError{exitUsage, dbError(dir, err)}
	}
	return nil, &exitError{exitFailure, dbError(dir, err)}
}

// dbError says what a failure to open the event DB in dir means.
func dbError(dir string, err error) error {
	switch {
	case errors.Is(err, eventdb.ErrNotDB) && errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no event database at %s (make one with reprise replay TAPE --db %s)", dir, dir)
	case errors.Is(err, eventdb.ErrInUse):
		return fmt.Errorf("event database %s is in use by another reprise process (a replay writing to it?)", dir)
	}
	return err
}

// warnRun tells the user what they must know about the run of dir a tool
// read: that it is incomplete, or that newer incomplete runs were passed
// over for it.
func warnRun(w io.Writer, dir string, run uint32, n report.RunNote) {
	if n.Incomplete {
		fmt.Fprintf(w, "reprise: warning: run %d of %s is incomplete: its replay stopped early, and its events stop where it stopped\n", run, dir)
	}
	if len(n.SkippedIncomplete) > 0 {
		ids := make([]string, len(n.SkippedIncomplete))
		for i, id := range n.SkippedIncomplete {
			ids[i] = fmt.Sprint(id)
		}
		runs := "run"
		if len(ids) > 1 {
			runs = "runs"
		}
		fmt.Fprintf(w, "reprise: note: reading run %d of %s, the latest complete one; skipped newer incomplete %s %s (--run N reads one)\n",
			run, dir, runs, strings.Join(ids, ", "))
	}
}
