package devices_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/vmm/devices"
)

func TestTimerSaveRestore(t *testing.T) {
	tm := devices.NewTimer(func() {}, 0)
	t.Cleanup(tm.Stop)
	require.NoError(t, tm.PortWrite(0, []byte{0xe8, 0x03, 0, 0})) // 1000 µs
	s := tm.Save()
	require.Equal(t, time.Millisecond, s.Period)

	var raised atomic.Int64
	r := devices.NewTimer(func() { raised.Add(1) }, 0)
	t.Cleanup(r.Stop)
	require.NoError(t, r.Restore(s))
	require.Equal(t, tm.Period(), r.Period())
	require.Equal(t, uint32(1000), readPort(r, 0))
	require.Equal(t, readPort(tm, 0), readPort(r, 0))
	require.Eventually(t, func() bool { return raised.Load() >= 2 }, 2*time.Second, time.Millisecond,
		"a restored running timer must be armed, as after SetPeriod")

	// A detached (replay) timer takes the period and still never fires.
	d := devices.NewTimer(nil, 0)
	require.NoError(t, d.Restore(s))
	require.Equal(t, time.Millisecond, d.Period())

	// Restoring a stopped timer disarms one that was running.
	require.NoError(t, r.Restore(devices.TimerState{}))
	require.Zero(t, r.Period())
	requireQuiet(t, &raised, "no raises after restoring a stopped timer")
}

func TestTimerStateJSON(t *testing.T) {
	requireRoundTrip(t, devices.TimerState{Period: devices.MaxTimerPeriod - time.Nanosecond})
}

func TestTimerRestoreBounds(t *testing.T) {
	for _, p := range []time.Duration{0, devices.MinTimerPeriod, devices.MaxTimerPeriod} {
		tm := devices.NewTimer(nil, 0)
		require.NoError(t, tm.Restore(devices.TimerState{Period: p}), "period %v", p)
		require.Equal(t, p, tm.Period())
	}
	for _, tc := range []struct {
		name   string
		period time.Duration
	}{
		{"negative", -time.Millisecond},
		{"a nanosecond", time.Nanosecond},
		{"just under the minimum", devices.MinTimerPeriod - time.Nanosecond},
		{"past the register", devices.MaxTimerPeriod + time.Nanosecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := devices.NewTimer(nil, 0)
			tm.SetPeriod(7 * time.Millisecond)
			requireStateError(t, tm.Restore(devices.TimerState{Period: tc.period}), "timer", "Period")
			require.Equal(t, 7*time.Millisecond, tm.Period(), "a refused Restore changed the timer")
		})
	}
}
