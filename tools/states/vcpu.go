package states

import (
	"fmt"
	"slices"
	"time"

	"github.com/reprise-vm/reprise/eventdb"
)

// loadVCPU builds a vCPU's states from the VMM's records: stays in the
// guest, idle waits, and VMM time in the gaps, charged to the exit that
// opened each gap.
func loadVCPU(db *eventdb.DB, run uint32, c eventdb.VCPU) (*VCPU, error) {
	v := &VCPU{Index: c.Index, TID: c.TID}
	idx := c.Index
	it := db.Merged(eventdb.Query{Run: run, Kinds: []eventdb.Kind{eventdb.KindVCPURun, eventdb.KindVCPUIdle}, Thread: &idx})
	var ivs []VCPUInterval
	for it.Next() {
		e := it.Event()
		if len(e.Args) != 1 {
			it.Close()
			return nil, fmt.Errorf("run %d: %v event %d has %d values, want 1", run, e.Kind, e.Seq, len(e.Args))
		}
		iv := VCPUInterval{Span: Span{e.Time, e.Time + time.Duration(e.Args[0])}, State: Idle, CPU: -1}
		if e.Kind == eventdb.KindVCPURun {
			iv.State, iv.ExitReason = Running, e.Addr
			v.Entries++
		}
		ivs = append(ivs, iv)
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	// Idle waits are logged when they end, after the exit before them:
	// order by start.
	slices.SortStableFunc(ivs, func(a, b VCPUInterval) int { return int(a.Start - b.Start) })
	var lastExit uint64
	for i, iv := range ivs {
		if i > 0 {
			prev := v.Intervals[len(v.Intervals)-1]
			if gap := (Span{prev.End, iv.Start}); gap.Len() > 0 {
				v.Intervals = append(v.Intervals, VCPUInterval{Span: gap, State: VMM, ExitReason: lastExit, CPU: -1})
			} else if gap.Len() < 0 {
				iv.Start = prev.End // clock granularity: never overlap
			}
		}
		if iv.State == Running {
			lastExit = iv.ExitReason
			iv.ExitReason = 0
		}
		if iv.Len() > 0 {
			v.Intervals = append(v.Intervals, iv)
		}
	}
	return v, nil
}
