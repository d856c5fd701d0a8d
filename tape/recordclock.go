package tape

import (
	"time"
)

// RecordClock maps positions between a tape's events to the recorded
// run's host time (a replay times what it sees with it; a recording
// keeps one too, for its checkpoints). Only
// tape events carry a record time; a point between two of them is placed by
// its branch count (or, where positions count no branches — exit-sync —
// by its exit count), on the line between the two events when the guest ran
// all along, and at the run's average busy rate after the earlier one when
// the guest idled in between (the idle period's start was never recorded).
// Times never go below the earlier event's nor above the later one's.
type RecordClock struct {
	ByExit   bool // positions count exits only: place points by them
	Last     Position
	LastTime time.Duration
	Halts    uint64 // HLT exits when the last event was applied
	BusyNs   time.Duration
	BusyBr   uint64 // branches (or exits) over BusyNs: intervals without idle
}

// Advance moves to the event just applied; halts counts HLT exits so far.
func (c *RecordClock) Advance(ev *Event, halts uint64) {
	if halts == c.Halts && c.coord(ev.Pos) > c.coord(c.Last) && ev.HostTime > c.LastTime {
		c.BusyNs += ev.HostTime - c.LastTime
		c.BusyBr += c.coord(ev.Pos) - c.coord(c.Last)
	}
	c.Last, c.LastTime, c.Halts = ev.Pos, ev.HostTime, halts
}

// coord is where a position is on the line between events.
func (c *RecordClock) coord(p Position) uint64 {
	if c.ByExit {
		return p.Exit
	}
	return p.Branch
}

// At is the record time of a point at p, before next (nil: none is
// known), with halts HLT exits so far.
func (c *RecordClock) At(p Position, next *Event, halts uint64) time.Duration {
	b, last := c.coord(p), c.coord(c.Last)
	if b <= last {
		return c.LastTime
	}
	done := b - last
	var t time.Duration
	switch {
	case next != nil && halts == c.Halts && c.coord(next.Pos) > last:
		span := c.coord(next.Pos) - last
		t = c.LastTime + time.Duration(float64(next.HostTime-c.LastTime)*float64(done)/float64(span))
	case c.BusyBr > 0:
		t = c.LastTime + time.Duration(float64(c.BusyNs)*float64(done)/float64(c.BusyBr))
	default:
		t = c.LastTime
	}
	if next != nil && t > next.HostTime {
		t = next.HostTime
	}
	return t
}
