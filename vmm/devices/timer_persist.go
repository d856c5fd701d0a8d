package devices

import (
	"time"

	"github.com/reprise-vm/reprise/abi"
)

// TimerState is the timer's state: the period the guest programmed.
//
// The time left to the next expiry is not kept: host time drives the timer
// (in replay the tape supplies the ticks), so a restored timer, like one
// the guest has just programmed, first fires a whole period after Restore.
// Jitter and the raise function are the constructor's.
type TimerState struct {
	// Period is the programmed period (in JSON, a number of nanoseconds):
	// 0 when stopped, else within [MinTimerPeriod, MaxTimerPeriod].
	Period time.Duration
}

// Save returns the timer's state.
func (t *Timer) Save() TimerState { return TimerState{Period: t.Period()} }

// Restore programs s's period through SetPeriod, exactly as a guest write
// would: a timer with a raise function is armed, a detached one keeps the
// period without firing.
func (t *Timer) Restore(s TimerState) error {
	if err := checkTimerPeriod(s.Period); err != nil {
		return err
	}
	t.SetPeriod(s.Period)
	return nil
}

func checkTimerPeriod(p time.Duration) error {
	bad := func(reason string) error { return &StateError{"timer", "Period", p, reason} }
	switch {
	case p == 0:
		return nil
	case p < 0:
		return bad("a period is never negative (0 means stopped)")
	case p > MaxTimerPeriod:
		return bad("longer than the timer's register can hold (" + MaxTimerPeriod.String() + ")")
	}
	// The rate, rounded up: a period a nanosecond under MinTimerPeriod is
	// already too fast.
	if err := abi.CheckTimerHz(int((time.Second + p - 1) / p)); err != nil {
		return bad(err.Error())
	}
	return nil
}
