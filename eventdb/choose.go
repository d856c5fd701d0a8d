package eventdb

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNoSuitableRun says ChooseRun found no run for the tool.
var ErrNoSuitableRun = errors.New("eventdb: no suitable run")

// Choice is the run ChooseRun picked.
type Choice struct {
	Run Run
	// Skipped lists, in id order, the incomplete runs newer than Run that
	// the default choice passed over; nil when the caller named the run.
	Skipped []uint32
}

// ChooseRun picks the run a tool reads, by one rule for every tool.
// suits says whether the tool can read a run: nil if it can, otherwise an
// error saying why not, without the run's id (e.g. "no samples"). A nil
// suits accepts every run.
//
// A non-zero id is a run the user named: ChooseRun returns it, complete
// or not, unless it does not exist (ErrNoRun) or suits rejects it.
// Reading an incomplete run is then the user's call; the caller says that
// its events stop where its replay stopped.
//
// With id 0, ChooseRun returns the latest complete run that suits. An
// incomplete run (its replay was killed, interrupted, or diverged) holds
// only the events before the cut, so it is never chosen by default; the
// Choice lists the newer ones passed over. When no run suits, the error
// wraps ErrNoSuitableRun and says why for each run, newest first, e.g.
// "run 3 is incomplete; runs 1–2: no samples".
func (db *DB) ChooseRun(id uint32, suits func(*Run) error) (Choice, error) {
	if suits == nil {
		suits = func(*Run) error { return nil }
	}
	if id != 0 {
		run, err := db.Run(id)
		if err != nil {
			return Choice{}, err
		}
		if err := suits(&run); err != nil {
			return Choice{}, fmt.Errorf("run %d: %w", id, err)
		}
		return Choice{Run: run}, nil
	}
	runs, err := db.Runs()
	if err != nil {
		return Choice{}, err
	}
	if len(runs) == 0 {
		return Choice{}, fmt.Errorf("%w: %s has no runs", ErrNoSuitableRun, db.dir)
	}
	var (
		skipped []uint32
		why     whyNot
	)
	for _, run := range slices.Backward(runs) {
		if !run.Complete {
			skipped = append(skipped, run.ID)
			why.add(run.ID, "")
			continue
		}
		if err := suits(&run); err != nil {
			why.add(run.ID, err.Error())
			continue
		}
		slices.Reverse(skipped)
		return Choice{Run: run, Skipped: skipped}, nil
	}
	return Choice{}, fmt.Errorf("%w in %s: %s", ErrNoSuitableRun, db.dir, why.String())
}

// whyNot says why runs were not chosen, newest first, with runs in a row
// that share a reason in one group.
type whyNot struct {
	groups []whyGroup
}

type whyGroup struct {
	first, last uint32 // the group's runs, oldest and newest
	reason      string // "": the runs are incomplete
}

// add notes why run id, older than every run added before, was passed over.
func (w *whyNot) add(id uint32, reason string) {
	if n := len(w.groups); n > 0 && w.groups[n-1].first == id+1 && w.groups[n-1].reason == reason {
		w.groups[n-1].first = id
		return
	}
	w.groups = append(w.groups, whyGroup{first: id, last: id, reason: reason})
}

func (w *whyNot) String() string {
	parts := make([]string, len(w.groups))
	for i, g := range w.groups {
		runs, are := fmt.Sprintf("run %d", g.first), "is"
		if g.first != g.last {
			runs, are = fmt.Sprintf("runs %d–%d", g.first, g.last), "are"
		}
		if g.reason == "" {
			parts[i] = fmt.Sprintf("%s %s incomplete", runs, are)
		} else {
			parts[i] = runs + ": " + g.reason
		}
	}
	return strings.Join(parts, "; ")
}
