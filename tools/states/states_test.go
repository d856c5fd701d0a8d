package states

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/host/hostview"
	"github.com/reprise-vm/reprise/kvm"
)

const us = time.Microsecond

// synthetic writes a run by hand: vCPU 0 on host thread 100, a host hog
// 200 and a kworker 300 on host CPU 1, two guest threads.
func synthetic(t *testing.T, sched bool) (*eventdb.DB, uint32) {
	db, err := eventdb.Open(t.TempDir(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	run, in, err := db.NewRun("/tapes/vm-a.tape", nil, "")
	require.NoError(t, err)
	add := func(e eventdb.Event) { require.NoError(t, in.Add(&e)) }
	runEv := func(at, dur time.Duration, exit uint64, reason kvm.ExitReason) {
		add(eventdb.Event{Kind: eventdb.KindVCPURun, Pos: eventdb.Position{Exit: exit}, Time: at, Addr: uint64(reason), Args: []uint64{uint64(dur)}})
	}
	// Guest: 10-40 in the guest, 40-45 VMM (IO), 45-100 guest, 100-110 VMM
	// (HLT) then idle 110-200, 200-300 guest.
	runEv(10*us, 30*us, 1, kvm.ExitIO)
	runEv(45*us, 55*us, 2, kvm.ExitHLT)
	add(eventdb.Event{Kind: eventdb.KindVCPUIdle, Pos: eventdb.Position{Exit: 2}, Time: 110 * us, Args: []uint64{uint64(90 * us)}})
	runEv(200*us, 100*us, 3, kvm.ExitIO)
	// Guest threads: 1 runs until 60 and is preempted by 2, which blocks
	// at 90; 1 runs again from 200.
	add(eventdb.Event{Kind: eventdb.KindSwitch, Thread: 1, Pos: eventdb.Position{Exit: 1, Branch: 5}, Time: 60 * us, Addr: 2, Args: []uint64{0}})
	add(eventdb.Event{Kind: eventdb.KindSwitch, Thread: 2, Pos: eventdb.Position{Exit: 1, Branch: 9}, Time: 90 * us, Addr: 0, Args: []uint64{1}})
	add(eventdb.Event{Kind: eventdb.KindSwitch, Thread: 0, Pos: eventdb.Position{Exit: 2, Branch: 9}, Time: 200 * us, Addr: 1, Args: []uint64{0}})
	if sched {
		sw := func(at time.Duration, prev, next uint32, state hostview.State) {
			add(eventdb.Event{Kind: eventdb.KindHostSwitch, Thread: 1, Time: at, Addr: uint64(next), Args: []uint64{uint64(prev), uint64(state)}})
		}
		// The vCPU is preempted by the hog 20-35 (in the guest) and, after
		// sleeping in idle, woken at 150 but kept waiting by the kworker
		// until 170; the switch in at 170 is missing (this host's kernel
		// drops some), so the wait must end at the next VMM timestamp, 200.
		sw(20*us, 100, 200, hostview.StateRunnable)
		sw(35*us, 200, 100, hostview.StateRunnable)
		sw(112*us, 100, 300, hostview.StateBlocked)
		add(eventdb.Event{Kind: eventdb.KindHostWakeup, Thread: 100, Time: 150 * us, Args: []uint64{1}})
		sw(250*us, 300, 0, hostview.StateBlocked)
	}
	require.NoError(t, in.Finish())
	h := &eventdb.Host{Start: time.Hour, Sched: sched, VCPUs: []eventdb.VCPU{{Index: 0, TID: 100}},
		Threads: []eventdb.HostThread{{TID: 100, Comm: "reprise"}, {TID: 200, Comm: "hog"}, {TID: 300, Comm: "kworker/1:0"}}}
	if !sched {
		h.Missing = "host scheduling not recorded (--host vmm)"
	}
	require.NoError(t, db.SetHost(run.ID, h))
	return db, run.ID
}

func TestLoadVMMOnly(t *testing.T) {
	db, run := synthetic(t, false)
	r, err := Load(db, run)
	require.NoError(t, err)
	require.Equal(t, "vm-a", r.Name)
	require.False(t, r.Sched)
	iv := func(from, to time.Duration, s VCPUState, exit kvm.ExitReason) VCPUInterval {
		return VCPUInterval{Span: Span{from * us, to * us}, State: s, ExitReason: uint64(exit), CPU: -1}
	}
	require.Equal(t, []VCPUInterval{
		iv(10, 40, Running, 0), iv(40, 45, VMM, kvm.ExitIO), iv(45, 100, Running, 0),
		iv(100, 110, VMM, kvm.ExitHLT), iv(110, 200, Idle, 0), iv(200, 300, Running, 0),
	}, r.VCPUs[0].Intervals)
	require.Equal(t, 3, r.VCPUs[0].Entries)
	require.Equal(t, Span{10 * us, 300 * us}, r.Span)

	require.Equal(t, []Current{{Span{10 * us, 60 * us}, 1}, {Span{60 * us, 90 * us}, 2}, {Span{90 * us, 200 * us}, 0}, {Span{200 * us, 300 * us}, 1}}, r.Current)
	require.Equal(t, []ThreadInterval{{Span{10 * us, 60 * us}, ThreadRunning}, {Span{60 * us, 200 * us}, ThreadRunnable}, {Span{200 * us, 300 * us}, ThreadRunning}}, r.Threads[1].Intervals)
	require.Equal(t, []ThreadInterval{{Span{60 * us, 90 * us}, ThreadRunning}, {Span{90 * us, 300 * us}, ThreadBlocked}}, r.Threads[2].Intervals)
}

func TestLoadWithSched(t *testing.T) {
	db, run := synthetic(t, true)
	r, err := Load(db, run)
	require.NoError(t, err)
	require.True(t, r.Sched)
	iv := func(from, to time.Duration, s VCPUState, exit kvm.ExitReason, cpu int32) VCPUInterval {
		return VCPUInterval{Span: Span{from * us, to * us}, State: s, ExitReason: uint64(exit), CPU: cpu}
	}
	require.Equal(t, []VCPUInterval{
		iv(10, 20, Running, 0, -1), iv(20, 35, Preempted, 0, 1), iv(35, 40, Running, 0, -1),
		iv(40, 45, VMM, kvm.ExitIO, -1), iv(45, 100, Running, 0, -1), iv(100, 110, VMM, kvm.ExitHLT, -1),
		iv(110, 150, Idle, 0, -1), iv(150, 200, Preempted, 0, 1), iv(200, 300, Running, 0, -1),
	}, r.VCPUs[0].Intervals, "the wake-up wait ends at the next VMM timestamp, its switch in missing")
	byState, byExit := r.VCPUs[0].Totals()
	require.Equal(t, 65*us, byState[Preempted])
	require.Equal(t, 5*us, byExit[uint64(kvm.ExitIO)])

	require.Equal(t, []HostSlice{{Span{0, 20 * us}, 100}, {Span{20 * us, 35 * us}, 200}, {Span{35 * us, 112 * us}, 100}, {Span{112 * us, 250 * us}, 300}}, r.CPUs[1])
	require.Equal(t, []HostSlice{{Span{140 * us, 160 * us}, 300}}, r.SlicesBetween(1, Span{140 * us, 160 * us}))
	require.Equal(t, "hog", r.Comm(200))
	require.Equal(t, "tid 999", r.Comm(999))
	require.Same(t, r.VCPUs[0], r.VCPUByTID(100))

	other, err := Load(db, run)
	require.NoError(t, err)
	other.start = time.Hour + 5*us // recorded 5 µs later on the same host
	other.Align(r)
	require.Equal(t, Span{15 * us, 305 * us}, other.Span)
	require.Equal(t, Span{15 * us, 25 * us}, other.VCPUs[0].Intervals[0].Span)
}

func TestLoadWithoutHostView(t *testing.T) {
	db, err := eventdb.Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer db.Close()
	run, in, err := db.NewRun("old.tape", nil, "")
	require.NoError(t, err)
	require.NoError(t, in.Finish())
	_, err = Load(db, run.ID)
	require.ErrorIs(t, err, ErrNoHostView)
	require.ErrorContains(t, err, "replay the tape again")
}

// An incomplete run (its replay stopped early) is read only when named;
// the default is the latest complete run, which says what it skipped.
func TestLoadSkipsIncompleteRuns(t *testing.T) {
	db, complete := synthetic(t, true)
	cut, in, err := db.NewRun("/tapes/vm-a.tape", nil, "")
	require.NoError(t, err)
	require.NoError(t, in.Add(&eventdb.Event{Kind: eventdb.KindVCPURun, Pos: eventdb.Position{Exit: 1}, Time: 10 * us, Args: []uint64{uint64(30 * us)}}))
	require.NoError(t, in.Close()) // never finished: no host view stored

	r, err := Load(db, 0)
	require.NoError(t, err)
	require.Equal(t, complete, r.ID)
	require.False(t, r.Note.Incomplete)
	require.Equal(t, []uint32{cut.ID}, r.Note.SkippedIncomplete)

	// Named, it is incomplete, not without a host view.
	_, err = Load(db, cut.ID)
	require.ErrorIs(t, err, ErrIncomplete)
	require.NotErrorIs(t, err, ErrNoHostView)

	// An incomplete run with a host view reads, marked incomplete.
	require.NoError(t, db.SetHost(cut.ID, &eventdb.Host{Start: time.Hour, VCPUs: []eventdb.VCPU{{Index: 0, TID: 100}}}))
	r, err = Load(db, cut.ID)
	require.NoError(t, err)
	require.Equal(t, cut.ID, r.ID)
	require.True(t, r.Note.Incomplete)
	require.Len(t, r.VCPUs, 1)
}
