package debugger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/vmm"
)

// at is a checkpoint at exit e, record time t.
func at(e uint64, t time.Duration) checkpoint.Summary {
	return checkpoint.Summary{Time: t, Events: e, Pos: vmm.Position{Exit: e}, Stop: vmm.StopGuestExit}
}

// takes replays a run with an exit every 10 ms of record time from boot
// to exit end through s.KeepCheckpoint, holding what it keeps (each
// costing cost), and returns the exits kept. The replay runs at the
// recording's pace divided by speed.
func takes(s *Session, end uint64, cost time.Duration, speed int) []uint64 {
	var kept []uint64
	var prev *checkpoint.Summary
	for e := uint64(1); e < end; e++ {
		here := at(e, time.Duration(e)*10*time.Millisecond)
		if s.KeepCheckpoint(prev, here, cost, since(prev, here)/time.Duration(speed)) {
			kept = append(kept, e)
			prev = &here
		}
	}
	return kept
}

// A replay to a place 32 s into the run keeps checkpoints halfway there
// from the last, then halfway again, closer and closer to it, never
// closer than minCheckpointGap to each other, and none past the place's
// exit; a replay going on from a stop keeps one at the first exit after it
// and then farther and farther apart; a window of a scan, a seek to an exit
// and a session gdb left keep none.
func TestSessionCheckpointsGatherNearThePlace(t *testing.T) {
	s := NewSession()
	s.replayAgain(&seeker{goal: Mark{Exit: 3200, Path: []Hop{{0x10, 1, 1}}, Time: 32 * time.Second}})
	toGoal := takes(s, 4000, 0, 1)
	require.Equal(t, []uint64{1600, 2400, 2800, 3000, 3100, 3150, 3175}, toGoal)
	require.Equal(t, []uint64{1600, 2400, 2800, 3000}, takes(s, 4000, time.Second, 1), "a checkpoint that took 1 s: none closer than 2 s")
	require.Equal(t, []uint64{1600, 2600}, takes(s, 4000, 100*time.Millisecond, 50),
		"a replay 50 times the recording's pace (a program that mostly sleeps): none where it ran less than twice a checkpoint's cost since the last")

	s.seek, s.now = nil, Mark{Exit: 1000, Path: []Hop{{0x10, 1, 1}}, Time: 10 * time.Second}
	prev := at(500, 5*time.Second)
	var kept []uint64
	for e := uint64(1001); e < 4000; e++ {
		here := at(e, time.Duration(e)*10*time.Millisecond)
		if s.KeepCheckpoint(&prev, here, 0, time.Hour) {
			kept, prev = append(kept, e), here
		}
	}
	require.Equal(t, []uint64{1001, 1026, 1052, 1104, 1208, 1416, 1832, 2664}, kept, "from the stop at exit 1000 on")

	for _, sk := range []*seeker{{window: true}, {at: &exitGoal{exit: 3000}}, {goal: Mark{Start: true}}} {
		s.replayAgain(sk)
		require.Empty(t, takes(s, 4000, 0, 1))
	}
	s.replayAgain(&seeker{goal: Mark{Exit: 3200, Path: []Hop{{0x10, 1, 1}}, Time: 32 * time.Second}})
	s.detached.Store(true)
	require.Empty(t, takes(s, 4000, 0, 1))
}

// list is a Checkpoints of fixed summaries.
type list []checkpoint.Summary

func (l list) Checkpoints() []checkpoint.Summary { return l }
func (l list) Taken() (int, string)              { return 0, "" }

// A replay starts from the latest checkpoint before its place's exit,
// whatever order the session's checkpoints were taken in; a scan back
// widens over them in the run's order; a kit guest's start at boot.
func TestReplaysStartFromTheLatestCheckpointBefore(t *testing.T) {
	s := &server{checkpoints: list{at(10, time.Second), at(50, 5*time.Second), at(30, 3*time.Second), at(20, 2*time.Second)}}
	require.Equal(t, 0, s.before(10), "a place's own exit is not enough")
	require.Equal(t, 1, s.before(11))
	require.Equal(t, 4, s.before(30))
	require.Equal(t, 3, s.before(50))
	require.Equal(t, 2, s.before(51))
	require.Equal(t, 4, s.beforeTime(2500*time.Millisecond))
	require.Equal(t, 0, s.beforeTime(time.Second))
	st := s.starts()
	require.Equal(t, []int{1, 4, 3, 2}, []int{st[0].n, st[1].n, st[2].n, st[3].n})
	s.kit = true
	require.Equal(t, 0, s.before(51))
}
