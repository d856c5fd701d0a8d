package replayer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/tape"
)

func TestRecordClock(t *testing.T) {
	ev := func(b uint64, ms int) *tape.Event {
		return &tape.Event{Pos: tape.Position{Branch: b}, HostTime: time.Duration(ms) * time.Millisecond}
	}
	br := func(b uint64) tape.Position { return tape.Position{Branch: b} }
	var c recordClock
	c.advance(ev(1000, 10), 0)
	// Busy between two events: on the line between them.
	require.Equal(t, 15*time.Millisecond, c.at(br(1500), ev(2000, 20), 0))
	require.Equal(t, 10*time.Millisecond, c.at(br(900), ev(2000, 20), 0), "never before the last event")
	c.advance(ev(2000, 20), 0)
	// The guest idled before the next event: 10 ms per 1000 branches, the
	// rate of the busy stretch, not the line to the wake-up 1 s later.
	require.Equal(t, 25*time.Millisecond, c.at(br(2500), ev(3000, 1020), 1))
	require.Equal(t, 1020*time.Millisecond, c.at(br(900000), ev(3000, 1020), 1), "never after the next event")
	c.advance(ev(3000, 1020), 1)
	// The idle stretch did not count in the rate.
	require.Equal(t, 1030*time.Millisecond, c.at(br(4000), nil, 1))
}

// Exit-sync positions count no branches: points are placed by their exit
// counts.
func TestRecordClockByExits(t *testing.T) {
	ev := func(exit uint64, ms int) *tape.Event {
		return &tape.Event{Pos: tape.Position{Exit: exit}, HostTime: time.Duration(ms) * time.Millisecond}
	}
	c := recordClock{byExit: true}
	c.advance(ev(100, 10), 0)
	require.Equal(t, 12*time.Millisecond, c.at(tape.Position{Exit: 120}, ev(200, 20), 0))
}
