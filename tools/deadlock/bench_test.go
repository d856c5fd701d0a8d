package deadlock_test

import (
	"testing"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/internal/tooltest"
	"github.com/reprise-vm/reprise/tools/deadlock"
)

// BenchmarkDeadlock10M runs the deadlock detector over a real DB of 10 M
// lock probe events with nested acquisitions in a ring order (cycles to
// find); peak-MiB is the Go heap's high-water mark during the run.
func BenchmarkDeadlock10M(b *testing.B) {
	db, err := eventdb.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	run := tooltest.SyntheticLockRun(b, db, 10_000_000)
	b.ResetTimer()
	for range b.N {
		stop := tooltest.PeakHeap()
		rep, err := deadlock.Build(db, deadlock.Options{Run: run.ID})
		peak := stop()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(rep.Deadlocks)), "cycles")
		b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	}
	b.ReportMetric(float64(run.Events), "events")
}
