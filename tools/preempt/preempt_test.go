package preempt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/tools/states"
)

func span(from, to time.Duration) states.Span {
	return states.Span{Start: from * time.Microsecond, End: to * time.Microsecond}
}

// TestFlowResolvesHolders: a hand-made pair of runs, every kind of holder
// once, checked stretch by stretch.
func TestFlowResolvesHolders(t *testing.T) {
	a := &states.Run{
		Name: "a", Span: span(0, 40), Sched: true,
		VCPUs: []*states.VCPU{{Index: 0, TID: 100, Intervals: []states.VCPUInterval{
			{Span: span(0, 10), State: states.Running, CPU: -1},
			{Span: span(10, 20), State: states.Preempted, CPU: 1},
			{Span: span(20, 30), State: states.Running, CPU: -1},
			{Span: span(30, 32), State: states.VMM, ExitReason: uint64(kvm.ExitIO), CPU: -1},
			{Span: span(32, 40), State: states.Running, CPU: -1},
		}}},
		Current: []states.Current{{Span: span(0, 40), TID: 1}},
		Threads: map[uint32]*states.Thread{1: {TID: 1, Intervals: []states.ThreadInterval{{Span: span(0, 40), State: states.ThreadRunning}}}},
		CPUs: map[uint32][]states.HostSlice{1: {
			{Span: span(0, 10), TID: 100}, {Span: span(10, 14), TID: 200}, {Span: span(14, 20), TID: 500}, {Span: span(20, 40), TID: 100},
		}},
	}
	b := &states.Run{
		Name: "b", Span: span(0, 40),
		VCPUs:   []*states.VCPU{{Index: 0, TID: 500, Intervals: []states.VCPUInterval{{Span: span(0, 40), State: states.Running, CPU: -1}}}},
		Current: []states.Current{{Span: span(0, 40), TID: 7}},
		Threads: map[uint32]*states.Thread{7: {TID: 7, Intervals: []states.ThreadInterval{{Span: span(0, 40), State: states.ThreadRunning}}}},
	}
	tid := uint32(1)
	rep, err := Analyze(a, []*states.Run{b}, Options{Thread: &tid})
	require.NoError(t, err)
	self := Holder{"thread 1", Guest("a")}
	require.Equal(t, []Entry{
		{span(0, 10), self},
		{span(10, 14), Holder{"tid 200", SystemHost}},
		{span(14, 20), Holder{"thread 7", Guest("b")}},
		{span(20, 30), self},
		{span(30, 32), Holder{"VMM: IO", VMM("a")}},
		{span(32, 40), self},
	}, rep.Flow.Entries)
	require.Equal(t, 40*time.Microsecond, rep.Flow.Wanted)
	require.Equal(t, 28*time.Microsecond, rep.Flow.Ran)
	require.Equal(t, Total{self, 28 * time.Microsecond, 3}, rep.Flow.PerHolder[0])

	v := rep.VCPUs[0]
	require.Equal(t, 10*time.Microsecond, v.Steal)
	require.Equal(t, 1, v.Preemptions)
	require.Equal(t, []Total{{Holder{"thread 7", Guest("b")}, 6 * time.Microsecond, 1}, {Holder{"tid 200", SystemHost}, 4 * time.Microsecond, 1}}, v.By)
	require.Equal(t, []Virtual{{TID: 1, Time: 10 * time.Microsecond, Count: 1}}, rep.Virtual)

	// A window keeps the flow to its stretch.
	rep, err = Analyze(a, []*states.Run{b}, Options{Thread: &tid, Windows: []states.Span{span(12, 25)}})
	require.NoError(t, err)
	require.Equal(t, 13*time.Microsecond, rep.Flow.Wanted)
	require.Equal(t, []Entry{{span(12, 14), Holder{"tid 200", SystemHost}}, {span(14, 20), Holder{"thread 7", Guest("b")}}, {span(20, 25), self}}, rep.Flow.Entries)

	bad := uint32(9)
	_, err = Analyze(a, nil, Options{Thread: &bad})
	require.ErrorContains(t, err, "no guest thread 9 (threads: [1])")
}
