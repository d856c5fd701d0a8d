package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/reprise-vm/reprise/abi"
)

// Flag values that check their bounds as they are parsed: a negative
// timeout or a tick rate of a hundred megahertz is refused with the flag's
// name (cobra adds it) before anything runs.

// durationFlag is a duration in [min, max], or 0 where off says what 0 means.
type durationFlag struct {
	d        *time.Duration
	min, max time.Duration
	off      string // what 0 means ("no limit"); "" if 0 is refused
}

func newDurationFlag(d *time.Duration, min, max time.Duration, off string) *durationFlag {
	return &durationFlag{d: d, min: min, max: max, off: off}
}

func (f *durationFlag) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want a duration such as 500ms or 2s")
	}
	if d == 0 && f.off != "" {
		*f.d = 0
		return nil
	}
	if d < f.min || d > f.max {
		return fmt.Errorf("want %s", f.want())
	}
	*f.d = d
	return nil
}

func (f *durationFlag) want() string {
	var w string
	switch {
	case f.max == maxDuration && f.min == 0:
		w = "a duration of 0 or more"
	case f.max == maxDuration && f.min <= time.Nanosecond:
		w = "a positive duration"
	case f.max == maxDuration:
		w = fmt.Sprintf("a duration of at least %v", f.min)
	default:
		w = fmt.Sprintf("a duration from %v to %v", f.min, f.max)
	}
	if f.off != "" {
		w += ", or 0 for " + f.off
	}
	return w
}

func (f *durationFlag) String() string { return f.d.String() }
func (f *durationFlag) Type() string   { return "duration" }

const maxDuration = time.Duration(1<<63 - 1)

// countFlag is a positive count; leaving the flag out leaves it 0 (off),
// but an explicit 0 is refused: "--sample 0" means nothing.
type countFlag struct {
	n    *uint64
	what string // e.g. "branch counts between samples"
}

func (f *countFlag) Set(v string) error {
	n, err := strconv.ParseUint(v, 0, 64)
	if err != nil || n == 0 {
		return fmt.Errorf("want a positive number of %s", f.what)
	}
	*f.n = n
	return nil
}

func (f *countFlag) String() string { return strconv.FormatUint(*f.n, 10) }
func (f *countFlag) Type() string   { return "uint" }

// timerHzFlag is --timer-hz: 0 (no timer) to abi.MaxTimerHz.
type timerHzFlag int

func (f *timerHzFlag) Set(v string) error {
	hz, err := strconv.Atoi(v)
	if err != nil || hz < 0 {
		return fmt.Errorf("want a tick rate in Hz, from 0 (no timer) to %d", abi.MaxTimerHz)
	}
	if err := abi.CheckTimerHz(hz); err != nil {
		return err
	}
	*f = timerHzFlag(hz)
	return nil
}

func (f *timerHzFlag) String() string { return strconv.Itoa(int(*f)) }
func (f *timerHzFlag) Type() string   { return "int" }

// limitFlag is a row or entry limit: 0 (all, or the default where said)
// or more.
type limitFlag int

func (f *limitFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("want 0 or a positive number")
	}
	*f = limitFlag(n)
	return nil
}

func (f *limitFlag) String() string { return strconv.Itoa(int(*f)) }
func (f *limitFlag) Type() string   { return "int" }

// threadFlag is a guest thread id (0: the idle thread, kernel included);
// Selected is nil when the flag was not given.
type threadFlag struct{ id *uint32 }

func (f *threadFlag) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return fmt.Errorf("not a guest thread id (0 to %d)", uint32(1<<32-1))
	}
	t := uint32(n)
	f.id = &t
	return nil
}

// Selected is the thread given, or nil.
func (f *threadFlag) Selected() *uint32 { return f.id }

func (f *threadFlag) String() string {
	if f.id == nil {
		return "all"
	}
	return strconv.FormatUint(uint64(*f.id), 10)
}
func (f *threadFlag) Type() string { return "tid" }
