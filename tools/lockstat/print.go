package lockstat

import (
	"fmt"
	"io"

	"github.com/reprise-vm/reprise/tools/report"
)

// Write prints the per-lock table, then the per-thread one.
func (r *Report) Write(w io.Writer) error {
	locks := report.Table{
		Title: fmt.Sprintf("locks of run %d (%d locks, %d acquisitions, %d contended)", r.Run, len(r.Locks), r.Total.Acquired, r.Total.Contended),
		Columns: []report.Column{{Name: "lock"}, {Name: "address"}, {Name: "acquired", Right: true},
			{Name: "contended", Right: true}, {Name: "blocked", Right: true}, {Name: "owner chg", Right: true},
			{Name: "threads", Right: true}, {Name: "wait total", Right: true}, {Name: "wait avg", Right: true},
			{Name: "wait max", Right: true}, {Name: "hold total", Right: true}, {Name: "hold avg", Right: true},
			{Name: "hold max", Right: true}, {Name: "first acquired at"}},
	}
	for _, l := range r.Locks {
		name := l.Name
		if l.Kind == "rwlock" {
			name += fmt.Sprintf(" (rwlock: %d reads, %d writes)", l.Reads, l.Writes)
		}
		if l.TryFailed+l.TimedOut > 0 {
			name += fmt.Sprintf(" (%d try failed, %d timed out)", l.TryFailed, l.TimedOut)
		}
		locks.Add(name, fmt.Sprintf("%#x", l.Addr), l.Acquired, l.Contended, fmt.Sprintf("%.2f%%", l.BlockedPct()),
			fmt.Sprintf("%.2f%%", l.OwnerChangePct()), l.Threads, report.Duration(l.WaitTotal), report.Duration(l.WaitAvg()), report.Duration(l.WaitMax),
			report.Duration(l.HoldTotal), report.Duration(l.HoldAvg()), report.Duration(l.HoldMax), l.FirstSite)
	}
	if err := locks.Write(w); err != nil {
		return err
	}
	threads := report.Table{
		Title: "\nper thread",
		Columns: []report.Column{{Name: "thread", Right: true}, {Name: "locks", Right: true}, {Name: "acquired", Right: true},
			{Name: "contended", Right: true}, {Name: "blocked", Right: true}, {Name: "wait total", Right: true},
			{Name: "wait max", Right: true}, {Name: "hold total", Right: true}, {Name: "hold max", Right: true}},
	}
	for _, t := range r.Threads {
		threads.Add(t.ID, t.Locks, t.Acquired, t.Contended, fmt.Sprintf("%.2f%%", t.BlockedPct()),
			report.Duration(t.WaitTotal), report.Duration(t.WaitMax), report.Duration(t.HoldTotal), report.Duration(t.HoldMax))
	}
	if err := threads.Write(w); err != nil {
		return err
	}
	if r.Unreleased > 0 {
		_, err := fmt.Fprintf(w, "\n%d locks were still held when the run ended\n", r.Unreleased)
		return err
	}
	return nil
}
