package deadlock_test

import (
	"testing"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/internal/tooltest"
	"github.com/reprise-vm/reprise/tools/deadlock"
)

// BenchmarkDeadlock10M runs the deadlock detector over a real DB of 10 M
// lock probe events with nested acquisitions in both orders (cycles to
// find).
func BenchmarkDeadlock10M(b *testing.B) {
	tooltest.BenchLockTool(b, "cycles", func(db *eventdb.DB, run uint32) (float64, error) {
		rep, err := deadlock.Build(db, deadlock.Options{Run: run})
		if err != nil {
			return 0, err
		}
		return float64(len(rep.Deadlocks)), nil
	})
}
