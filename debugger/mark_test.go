package debugger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/rsp"
	"github.com/reprise-vm/reprise/vmm"
)

// Arrivals count from the last stop or exit: a new exit starts a path of
// its own, a stop's mark is the base its next hops extend, and a step's
// landing on an int3 is one arrival, not two.
func TestArrivals(t *testing.T) {
	var a arrivals
	main := &Trap{TID: 1, PID: 1, Image: 1}
	m := a.arrive(7, 0x10, false, main)
	require.Equal(t, Mark{Exit: 7, Path: []Hop{{0x10, 1, 1}}, TID: 1, PID: 1, Image: 1}, m)
	m = a.arrive(7, 0x10, false, main)
	require.Equal(t, []Hop{{0x10, 2, 1}}, m.Path, "the second arrival in the stretch")

	a.restart(m) // stopped there
	m = a.arrive(7, 0x20, true, main)
	require.Equal(t, []Hop{{0x10, 2, 1}, {0x20, 1, 1}}, m.Path, "a step from the stop")
	m = a.arrive(7, 0x20, false, main)
	require.Equal(t, []Hop{{0x10, 2, 1}, {0x20, 1, 1}}, m.Path, "the int3 where the step landed: the same arrival")
	m = a.arrive(7, 0x20, false, main)
	require.Equal(t, []Hop{{0x10, 2, 1}, {0x20, 2, 1}}, m.Path, "the next trap there is the next arrival")

	m = a.arrive(9, 0x20, false, &Trap{TID: 2, PID: 1, Image: 1})
	require.Equal(t, Mark{Exit: 9, Path: []Hop{{0x20, 1, 2}}, TID: 2, PID: 1, Image: 1}, m, "a new exit: counted from it")
}

// A kit guest's threads share a stretch: each counts its own arrivals,
// and a step's landing is its one trap there.
func TestKitArrivals(t *testing.T) {
	var a arrivals
	one, two := &Trap{TID: 1, PID: 1, Kit: true}, &Trap{TID: 2, PID: 1, Kit: true}
	a.arrive(0, 0x10, false, one)
	m := a.arrive(0, 0x10, false, two)
	require.Equal(t, []Hop{{0x10, 1, 2}}, m.Path, "thread 2's first arrival")
	a.restart(m)
	m = a.arrive(0, 0x20, true, two)
	require.Equal(t, []Hop{{0x10, 1, 2}, {0x20, 1, 2}}, m.Path)
	m = a.arrive(0, 0x20, false, two)
	require.Equal(t, []Hop{{0x10, 1, 2}, {0x20, 2, 2}}, m.Path, "the next trap after a kit step's landing is the next arrival")
	m = a.arrive(0, 0x20, false, one)
	require.Equal(t, []Hop{{0x10, 1, 2}, {0x20, 1, 1}}, m.Path, "thread 1's own count")
}

// A seeker wants an int3 at each of its goal's hops (in the goal's
// process and image) and at each breakpoint it scans.
func TestSeekerWants(t *testing.T) {
	sk := &seeker{goal: Mark{Exit: 3, Path: []Hop{{0x10, 1, 4}, {0x30, 2, 4}}, PID: 4, Image: 1}, scan: map[bpKey]bool{{5, 1, 0x50}: true}}
	require.True(t, sk.wants(bpKey{4, 1, 0x30}))
	require.False(t, sk.wants(bpKey{5, 1, 0x30}), "another process's")
	require.False(t, sk.wants(bpKey{4, 2, 0x30}), "the image an exec put in its place")
	require.True(t, sk.wants(bpKey{5, 1, 0x50}))
	require.False(t, sk.wants(bpKey{4, 1, 0x40}))
}

// A client's breakpoints and watches are bounded before anything is
// placed: the one past the bound is refused without touching the
// program (a nil Break would be a crash).
func TestSessionBounds(t *testing.T) {
	s := NewSession()
	for i := range maxBreakpoints {
		s.user[bpKey{1, 1, uint64(i)}] = 1
	}
	require.ErrorContains(t, s.setBreak(nil, bpKey{1, 1, 1 << 40}), "at most")
	s.watches = make([]watch, maxWatches)
	require.ErrorContains(t, s.setWatch(nil, 1, 0x1000, 8, rsp.WatchWrite), "at most")
	s.watches = nil
	require.ErrorContains(t, s.setWatch(nil, 1, 0x1000, maxWatchSize+1, rsp.WatchRead), "at most")
}

// stoppedAt is a program stopped at exit exit, for the session's logic
// alone: nothing else of it is asked.
type stoppedAt struct {
	Program
	exit uint64
}

func (k stoppedAt) Position() vmm.Position { return vmm.Position{Exit: k.exit} }

func (k stoppedAt) RecordTime() time.Duration { return time.Duration(k.exit) * time.Millisecond }

func (stoppedAt) Exe(int) string { return "/bin/prog" }

// A seek to a kit place counted from an exit (an interrupt's) counts the
// goal's arrivals from there — one before it is not the goal's — and the
// place it stops at is counted from that exit still, not from boot.
func TestKitSeekCountsFromTheGoalsExit(t *testing.T) {
	s := NewSession()
	goal := Mark{Exit: 5, Path: []Hop{{0x10, 1, 7}}, TID: 7, PID: 1}
	s.replayAgain(&seeker{goal: goal})
	trap := func(exit, rip uint64, start bool) error {
		return s.trap(&Trap{TID: 7, PID: 1, Regs: &kvm.Regs{RIP: rip}, Start: start, Kit: true, Program: stoppedAt{exit: exit}})
	}
	require.NoError(t, trap(0, 0x1, true))
	require.NoError(t, trap(3, 0x10, false), "before the goal's exit: not counted")
	require.NotNil(t, s.seek)
	done := make(chan error)
	go func() { done <- trap(6, 0x10, false) }()
	st := <-s.stops
	require.Equal(t, uint64(0x10), st.regs.RIP)
	s.requests <- request{resume: &resume{kill: true}}
	require.ErrorIs(t, <-done, errKilled)
	require.Nil(t, s.seek, "arrived")
	require.Equal(t, goal.Exit, s.now.Exit, "the place is counted from the goal's exit")
	require.Equal(t, goal.Path, s.now.Path)
}
