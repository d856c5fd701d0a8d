package debugger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/rsp"
)

// call is thread 1 of process 1 at a system call's entry or return (at
// rip) at exit exit.
func call(exit, nr, rip uint64, entering bool) *Trap {
	return &Trap{TID: 1, PID: 1, Image: 1, Regs: &kvm.Regs{RIP: rip}, Syscall: nr, Returned: !entering, Program: stoppedAt{exit: exit}}
}

// A reverse scan records the entries and returns of the calls gdb
// catches before its goal — not other calls, not the goal itself (a
// return stop's own place), nothing after it.
func TestCallHitsBeforeTheGoal(t *testing.T) {
	s := NewSession()
	s.followed[1] = true
	goal := Mark{Exit: 10, Path: []Hop{{0x100, 1, 1}}, TID: 1, PID: 1, Image: 1}
	sk := &seeker{goal: goal, calls: newCatch(rsp.CatchSyscalls{Enable: true, Calls: []uint64{1}})}
	s.replayAgain(sk)
	require.NoError(t, s.entering(call(4, 1, 0x100, true)))
	require.NoError(t, s.entering(call(5, 0, 0x200, true)), "a call not caught")
	require.NoError(t, s.exited(call(4, 1, 0x100, false)))
	require.NoError(t, s.exited(call(10, 1, 0x100, false)), "the goal's own place")
	require.NoError(t, s.entering(call(11, 1, 0x100, true)), "after the goal")
	require.Len(t, sk.hits, 2)
	require.True(t, sk.hits[0].entry())
	require.Equal(t, uint64(4), sk.hits[0].Exit)
	require.Nil(t, sk.hits[0].Path, "an entry is at its exit, before the call is served")
	require.Equal(t, Mark{Exit: 4, Path: []Hop{{0x100, 1, 1}}, TID: 1, PID: 1, Image: 1, Time: 4 * time.Millisecond, Call: &callStop{nr: 1}, exe: "/bin/prog"}, sk.hits[1])
}

// A seek to a call's entry arrives there, at that exit's call, and stops
// as the call's entry; going on, the call's return stops if caught, but
// not in a thread gdb steps.
func TestCallStops(t *testing.T) {
	s := NewSession()
	s.followed[1] = true
	s.catch = newCatch(rsp.CatchSyscalls{Enable: true})
	goal := Mark{Exit: 6, TID: 1, PID: 1, Image: 1, Call: &callStop{nr: 1, entry: true}}
	s.replayAgain(&seeker{goal: goal})
	require.NoError(t, s.entering(call(5, 1, 0x100, true)), "an earlier exit's call")
	stopped := func(b *Trap, at func(*Trap) error) stop {
		done := make(chan error)
		go func() { done <- at(b) }()
		st := <-s.stops
		s.requests <- request{resume: &resume{}}
		require.NoError(t, <-done)
		return st
	}
	st := stopped(call(6, 1, 0x100, true), s.entering)
	require.Equal(t, stopSyscall, st.kind)
	require.Equal(t, callStop{nr: 1, entry: true}, st.call)
	require.Nil(t, s.seek, "arrived")
	require.True(t, s.now.same(goal))

	st = stopped(call(6, 1, 0x100, false), s.exited)
	require.Equal(t, callStop{nr: 1}, st.call, "its return")
	require.Equal(t, []Hop{{0x100, 1, 1}}, s.now.Path, "where the stretch after the call begins")

	s.stepFor[1] = addrRange{}
	require.NoError(t, s.entering(call(7, 1, 0x100, true)), "a stepped thread passes its calls")
	require.NoError(t, s.exited(call(7, 1, 0x100, false)))
	s.catch = newCatch(rsp.CatchSyscalls{})
	delete(s.stepFor, 1)
	require.NoError(t, s.entering(call(8, 1, 0x100, true)), "catch syscall deleted")
}
