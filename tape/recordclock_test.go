package tape

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRecordClock(t *testing.T) {
	ev := func(b uint64, ms int) *Event {
		return &Event{Pos: Position{Branch: b}, HostTime: time.Duration(ms) * time.Millisecond}
	}
	br := func(b uint64) Position { return Position{Branch: b} }
	var c RecordClock
	c.Advance(ev(1000, 10), 0)
	// Busy between two events: on the line between them.
	require.Equal(t, 15*time.Millisecond, c.At(br(1500), ev(2000, 20), 0))
	require.Equal(t, 10*time.Millisecond, c.At(br(900), ev(2000, 20), 0), "never before the last event")
	c.Advance(ev(2000, 20), 0)
	// The guest idled before the next event: 10 ms per 1000 branches, the
	// rate of the busy stretch, not the line to the wake-up 1 s later.
	require.Equal(t, 25*time.Millisecond, c.At(br(2500), ev(3000, 1020), 1))
	require.Equal(t, 1020*time.Millisecond, c.At(br(900000), ev(3000, 1020), 1), "never after the next event")
	c.Advance(ev(3000, 1020), 1)
	// The idle stretch did not count in the rate.
	require.Equal(t, 1030*time.Millisecond, c.At(br(4000), nil, 1))
}

// Exit-sync positions count no branches: points are placed by their exit
// counts.
func TestRecordClockByExits(t *testing.T) {
	ev := func(exit uint64, ms int) *Event {
		return &Event{Pos: Position{Exit: exit}, HostTime: time.Duration(ms) * time.Millisecond}
	}
	c := RecordClock{ByExit: true}
	c.Advance(ev(100, 10), 0)
	require.Equal(t, 12*time.Millisecond, c.At(Position{Exit: 120}, ev(200, 20), 0))
}
