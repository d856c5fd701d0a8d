package replayer

import (
	"time"

	"github.com/reprise-vm/reprise/tape"
)

// recordClock maps replay positions to the recorded run's host time. Only
// tape events carry a record time; a point between two of them is placed by
// its branch count (or, where positions count no branches — exit-sync —
// by its exit count), on the line between the two events when the guest ran
// all along, and at the run's average busy rate after the earlier one when
// the guest idled in between (the idle period's start was never recorded).
// Times never go below the earlier event's nor above the later one's.
type recordClock struct {
	byExit   bool // positions count exits only: place points by them
	last     tape.Position
	lastTime time.Duration
	halts    uint64 // HLT exits when the last event was applied
	busyNs   time.Duration
	busyBr   uint64 // branches over busyNs: intervals without idle
}

// advance moves to the event just applied; halts counts HLT exits so far.
func (c *recordClock) advance(ev *tape.Event, halts uint64) {
	if halts == c.halts && c.coord(ev.Pos) > c.coord(c.last) && ev.HostTime > c.lastTime {
		c.busyNs += ev.HostTime - c.lastTime
		c.busyBr += c.coord(ev.Pos) - c.coord(c.last)
	}
	c.last, c.lastTime, c.halts = ev.Pos, ev.HostTime, halts
}

// coord is where a position is on the line between events.
func (c *recordClock) coord(p tape.Position) uint64 {
	if c.byExit {
		return p.Exit
	}
	return p.Branch
}

// at is the record time of a point at p, before next (nil: none is
// known), with halts HLT exits so far.
func (c *recordClock) at(p tape.Position, next *tape.Event, halts uint64) time.Duration {
	b, last := c.coord(p), c.coord(c.last)
	if b <= last {
		return c.lastTime
	}
	done := b - last
	var t time.Duration
	switch {
	case next != nil && halts == c.halts && c.coord(next.Pos) > last:
		span := c.coord(next.Pos) - last
		t = c.lastTime + time.Duration(float64(next.HostTime-c.lastTime)*float64(done)/float64(span))
	case c.busyBr > 0:
		t = c.lastTime + time.Duration(float64(c.busyNs)*float64(done)/float64(c.busyBr))
	default:
		t = c.lastTime
	}
	if next != nil && t > next.HostTime {
		t = next.HostTime
	}
	return t
}
