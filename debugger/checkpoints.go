package debugger

import (
	"cmp"
	"slices"
	"time"

	"github.com/reprise-vm/reprise/checkpoint"
)

// Machine checkpoints: every command that goes back replays again, from
// the latest checkpoint before its goal. A session starts with the tape's
// checkpoint file's, if it has one, and its replays take more as they go
// (replayer.Options.KeepCheckpoint), spaced by record time, denser near
// where the user works: going to a place, a replay takes one when it is
// as far from the last checkpoint before it as from the place (halfway,
// then halfway again); going on from where the program stopped, soon
// after the stop and then twice as far from it each time. So a replay of
// a stretch T long takes about log₂(T ÷ minCheckpointGap) of them, and
// the next command near the place replays little. Record time stands for
// what replaying costs only where the program computes: a replay that ran
// for less than twice what a checkpoint takes since its last takes none.

// Checkpoints are the checkpoints replays start from
// (replayer.CheckpointSet), numbered from 1 in the order listed, which is
// not the run's.
type Checkpoints interface {
	Checkpoints() []checkpoint.Summary
	// Taken is how many the session took, and why it takes no more, if
	// it does not.
	Taken() (n int, full string)
}

// minCheckpointGap is the least record time between two checkpoints a
// session takes: a Linux program's checkpoint of a 256 MiB guest cost
// about as much to take (243 ms, docs/benchmarks.md, before captures
// stopped hashing zero pages) and a restore a fifth of that, so one closer
// to the last than this saves less than it costs.
// Where taking one costs more (a larger guest, a slower host), the gap is
// twice what the last took: where the program computes, a replay runs at
// about the recording's pace.
const minCheckpointGap = 250 * time.Millisecond

// gap is the least record time between two checkpoints, the last having
// cost that much to take.
func gap(cost time.Duration) time.Duration { return max(minCheckpointGap, 2*cost) }

// since is how long after prev (nil: boot) here is, in record time.
func since(prev *checkpoint.Summary, here checkpoint.Summary) time.Duration {
	if prev == nil {
		return here.Time
	}
	return here.Time - prev.Time
}

// spacedToward reports whether a checkpoint at here is due for a replay
// going to a place at record time goal: here is as far from the last
// checkpoint before it (prev; nil: boot) as from the place. cost is what
// the last checkpoint taken cost.
func spacedToward(prev *checkpoint.Summary, here checkpoint.Summary, goal, cost time.Duration) bool {
	return since(prev, here) >= max(gap(cost), goal-here.Time)
}

// spacedFrom reports whether a checkpoint at here is due for a replay
// going on from a stop at record time from: here is half as far from the
// last checkpoint before it as from the stop. cost is what the last
// checkpoint taken cost.
func spacedFrom(prev *checkpoint.Summary, here checkpoint.Summary, from, cost time.Duration) bool {
	return since(prev, here) >= max(gap(cost), (here.Time-from)/2)
}

// KeepCheckpoint says whether the replay, at here, takes a checkpoint of
// the session's (replayer.Options.KeepCheckpoint): a seek's before its
// goal's exit (a goal of no known time is taken to be near where the
// program stopped last), or one going on from the program's last stop;
// none after gdb detached, none for a seek whose goal is not a place (a
// window of a scan, a seek to an exit or time), and none where the
// replay ran less than twice what the last took since it started or took
// its last (ran): restoring one would save less than it costs — a program
// that mostly sleeps replays its record time in a moment. On the
// machine's goroutine.
func (s *Session) KeepCheckpoint(prev *checkpoint.Summary, here checkpoint.Summary, cost, ran time.Duration) bool {
	switch sk := s.seek; {
	case s.detached.Load() || ran < 2*cost:
		return false
	case sk == nil:
		return spacedFrom(prev, here, s.now.Time, cost)
	case sk.window || sk.at != nil || sk.goal.Start || here.Pos.Exit >= sk.goal.Exit:
		return false
	default:
		return spacedToward(prev, here, cmp.Or(sk.goal.Time, s.now.Time), cost)
	}
}

// start is a checkpoint a replay may start from: its number and where
// it is.
type start struct {
	n   int
	sum checkpoint.Summary
}

// starts are the checkpoints replays may start from, in the run's order.
func (s *server) starts() []start {
	if s.kit || s.checkpoints == nil {
		return nil // a kit guest's places count from boot (or from an exit, the scans then from boot)
	}
	var out []start
	for i, c := range s.checkpoints.Checkpoints() {
		out = append(out, start{i + 1, c})
	}
	slices.SortStableFunc(out, func(a, b start) int { return checkpoint.Compare(a.sum, b.sum) })
	return out
}

// rankBefore is how many of starts a replay to a place after exit may
// start from: those taken before that exit. A place's own exit is not
// enough: the stretch after it must be replayed whole.
func rankBefore(starts []start, exit uint64) int {
	n := 0
	for n < len(starts) && starts[n].sum.Pos.Exit < exit {
		n++
	}
	return n
}

// number is the checkpoint of rank r among starts (0: boot).
func number(starts []start, r int) int {
	if r == 0 {
		return 0
	}
	return starts[r-1].n
}

// before is the last checkpoint a replay to a place after exit may start
// from (0: boot).
func (s *server) before(exit uint64) int {
	st := s.starts()
	return number(st, rankBefore(st, exit))
}

// beforeTime is the last checkpoint taken before record time t (0: boot).
func (s *server) beforeTime(t time.Duration) int {
	st := s.starts()
	n := 0
	for n < len(st) && st[n].sum.Time < t {
		n++
	}
	return number(st, n)
}

// count notes a replay started from checkpoint from (0: boot): the
// tape's file's are numbered first.
func (s *server) count(from int) {
	if from == 0 {
		s.startedFrom[0]++
		return
	}
	taken, _ := s.checkpoints.Taken()
	if from <= len(s.checkpoints.Checkpoints())-taken {
		s.startedFrom[1]++
	} else {
		s.startedFrom[2]++
	}
}
