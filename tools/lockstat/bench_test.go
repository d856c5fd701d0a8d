package lockstat_test

import (
	"testing"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/internal/tooltest"
	"github.com/reprise-vm/reprise/tools/lockstat"
)

// BenchmarkLockstat10M runs lockstat over a real DB of 10 M lock probe
// events.
func BenchmarkLockstat10M(b *testing.B) {
	tooltest.BenchLockTool(b, "acquisitions", func(db *eventdb.DB, run uint32) (float64, error) {
		rep, err := lockstat.Build(db, lockstat.Options{Run: run})
		if err != nil {
			return 0, err
		}
		return float64(rep.Total.Acquired), nil
	})
}
