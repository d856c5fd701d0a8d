package states

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/host/hostview"
	"github.com/reprise-vm/reprise/tools/report"
)

// ErrNoHostView is returned by Load for a run whose recording kept no
// host view.
var ErrNoHostView = errors.New("the recording has no host view")

// ErrIncomplete is returned by Load for an incomplete run (its replay
// stopped early) without a host view: the replay stores it at the end.
var ErrIncomplete = errors.New("the run is incomplete: its replay stopped before it stored the host view")

// Load rebuilds a run's states from db; run 0 means the latest complete
// run with a host view (eventdb.DB.ChooseRun).
func Load(db *eventdb.DB, run uint32) (*Run, error) {
	choice, err := db.ChooseRun(run, func(r *eventdb.Run) error {
		_, err := hostView(db, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	rec := &choice.Run
	run = rec.ID
	host, err := hostView(db, rec)
	if err != nil {
		return nil, fmt.Errorf("run %d: %w", run, err)
	}
	r := &Run{
		ID:      run,
		Note:    report.NoteOf(&choice),
		Name:    strings.TrimSuffix(filepath.Base(rec.Tape), filepath.Ext(rec.Tape)),
		Sched:   host.Sched,
		Missing: host.Missing,
		Threads: map[uint32]*Thread{},
		CPUs:    map[uint32][]HostSlice{},
		comms:   map[uint32]string{},
		start:   host.Start,
	}
	for _, t := range host.Threads {
		r.comms[t.TID] = t.Comm
	}
	for _, c := range host.VCPUs {
		v, err := loadVCPU(db, run, c)
		if err != nil {
			return nil, err
		}
		r.VCPUs = append(r.VCPUs, v)
	}
	if r.Sched {
		if err := r.loadSched(db, run); err != nil {
			return nil, err
		}
	}
	for _, v := range r.VCPUs {
		if n := len(v.Intervals); n > 0 {
			if r.Span == (Span{}) || v.Intervals[0].Start < r.Span.Start {
				r.Span.Start = v.Intervals[0].Start
			}
			r.Span.End = max(r.Span.End, v.Intervals[n-1].End)
		}
	}
	if err := r.loadThreads(db, run); err != nil {
		return nil, err
	}
	return r, nil
}

// hostView returns run's host view, or why it has none.
func hostView(db *eventdb.DB, run *eventdb.Run) (*eventdb.Host, error) {
	host, err := db.Host(run.ID)
	switch {
	case errors.Is(err, eventdb.ErrNoHost) && !run.Complete:
		return nil, ErrIncomplete
	case errors.Is(err, eventdb.ErrNoHost):
		return nil, fmt.Errorf("%w (it was replayed by a reprise without host views: replay the tape again)", ErrNoHostView)
	case err != nil:
		return nil, err
	case len(host.VCPUs) == 0:
		return nil, fmt.Errorf("%w: %s", ErrNoHostView, host.Missing)
	}
	return host, nil
}

// loadVCPU builds a vCPU's states from the VMM's records: stays in the
// guest, idle waits, and VMM time in the gaps, charged to the exit that
// opened each gap.
func loadVCPU(db *eventdb.DB, run uint32, c eventdb.VCPU) (*VCPU, error) {
	v := &VCPU{Index: c.Index, TID: c.TID}
	idx := c.Index
	it := db.Merged(eventdb.Query{Run: run, Kinds: []eventdb.Kind{eventdb.KindVCPURun, eventdb.KindVCPUIdle}, Thread: &idx})
	var ivs []VCPUInterval
	for it.Next() {
		e := it.Event()
		if len(e.Args) != 1 {
			it.Close()
			return nil, fmt.Errorf("run %d: %v event %d has %d values, want 1", run, e.Kind, e.Seq, len(e.Args))
		}
		iv := VCPUInterval{Span: Span{e.Time, e.Time + time.Duration(e.Args[0])}, State: Idle, CPU: -1}
		if e.Kind == eventdb.KindVCPURun {
			iv.State, iv.ExitReason = Running, e.Addr
			v.Entries++
		}
		ivs = append(ivs, iv)
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	// Idle waits are logged when they end, after the exit before them:
	// order by start.
	slices.SortStableFunc(ivs, func(a, b VCPUInterval) int { return int(a.Start - b.Start) })
	var lastExit uint64
	for i, iv := range ivs {
		if i > 0 {
			prev := v.Intervals[len(v.Intervals)-1]
			if gap := (Span{prev.End, iv.Start}); gap.Len() > 0 {
				v.Intervals = append(v.Intervals, VCPUInterval{Span: gap, State: VMM, ExitReason: lastExit, CPU: -1})
			} else if gap.Len() < 0 {
				iv.Start = prev.End // clock granularity: never overlap
			}
		}
		if iv.State == Running {
			lastExit = iv.ExitReason
			iv.ExitReason = 0
		}
		if iv.Len() > 0 {
			v.Intervals = append(v.Intervals, iv)
		}
	}
	return v, nil
}

// loadSched reads host scheduling: what ran on each host CPU, and when
// each vCPU thread waited for one.
func (r *Run) loadSched(db *eventdb.DB, run uint32) error {
	waits := map[uint32]*waitTracker{}
	for _, v := range r.VCPUs {
		if v.TID != 0 {
			waits[v.TID] = &waitTracker{onCPU: true, cpu: -1}
		}
	}
	lastSwitch := map[uint32]time.Duration{}
	it := db.Merged(eventdb.Query{Run: run, Kinds: []eventdb.Kind{eventdb.KindHostSwitch, eventdb.KindHostWakeup, eventdb.KindHostMigrate}})
	for it.Next() {
		e := it.Event()
		if len(e.Args) != 2 && e.Kind != eventdb.KindHostWakeup || e.Kind == eventdb.KindHostWakeup && len(e.Args) != 1 {
			it.Close()
			return fmt.Errorf("run %d: %v event %d has %d values", run, e.Kind, e.Seq, len(e.Args))
		}
		switch e.Kind {
		case eventdb.KindHostSwitch:
			cpu, prev, next := e.Thread, uint32(e.Args[0]), uint32(e.Addr)
			// Tracing starts with the recording (time 0): the first
			// thread switched out on a CPU had it since then at least.
			if t := lastSwitch[cpu]; e.Time > t {
				r.CPUs[cpu] = append(r.CPUs[cpu], HostSlice{Span{t, e.Time}, prev})
			}
			lastSwitch[cpu] = e.Time
			if w := waits[prev]; w != nil {
				w.out(e.Time, int32(cpu), hostview.State(e.Args[1]) == hostview.StateRunnable)
			}
			if w := waits[next]; w != nil {
				w.in(e.Time)
			}
		case eventdb.KindHostWakeup:
			if w := waits[e.Thread]; w != nil {
				w.wake(e.Time, int32(e.Args[0]))
			}
		case eventdb.KindHostMigrate:
			if w := waits[e.Thread]; w != nil {
				w.migrate(e.Time, int32(e.Args[1]))
			}
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, v := range r.VCPUs {
		if w := waits[v.TID]; w != nil {
			if n := len(v.Intervals); n > 0 {
				w.in(v.Intervals[n-1].End) // still waiting at the end
			}
			v.Intervals = overlay(v.Intervals, clipWaits(w.waits, v.Intervals))
		}
	}
	return nil
}

// waitTracker follows one host thread's waits for a CPU.
type waitTracker struct {
	onCPU   bool
	waiting bool
	since   time.Duration
	cpu     int32
	waits   []VCPUInterval
}

func (w *waitTracker) out(t time.Duration, cpu int32, runnable bool) {
	w.onCPU = false
	if runnable {
		w.waiting, w.since, w.cpu = true, t, cpu
	}
}

func (w *waitTracker) wake(t time.Duration, cpu int32) {
	if !w.onCPU && !w.waiting {
		w.waiting, w.since, w.cpu = true, t, cpu
	}
}

func (w *waitTracker) migrate(t time.Duration, cpu int32) {
	if w.waiting {
		w.close(t)
		w.waiting, w.since = true, t
	}
	w.cpu = cpu
}

func (w *waitTracker) in(t time.Duration) {
	if w.waiting {
		w.close(t)
	}
	w.onCPU, w.waiting = true, false
}

func (w *waitTracker) close(t time.Duration) {
	if t > w.since {
		w.waits = append(w.waits, VCPUInterval{Span: Span{w.since, t}, State: Preempted, CPU: w.cpu})
	}
	w.waiting = false
}

// clipWaits ends each wait at the first VMM timestamp inside it: the
// vCPU thread takes those on a CPU, so it was running again by then.
// Some kernels miss sched_switch events (this host's misses switches out
// of its idle task), and a missed switch in would otherwise stretch a
// wait over the time the vCPU ran.
func clipWaits(waits, base []VCPUInterval) []VCPUInterval {
	out := waits[:0]
	for _, w := range waits {
		// The first base interval starting or ending inside w.
		i := sort.Search(len(base), func(i int) bool { return base[i].End > w.Start })
		for ; i < len(base) && base[i].Start < w.End; i++ {
			if b := base[i]; b.Start > w.Start {
				w.End = b.Start
				break
			} else if b.End < w.End {
				w.End = b.End
				break
			}
		}
		if w.Len() > 0 {
			out = append(out, w)
		}
	}
	return out
}

// overlay replaces the parts of base covered by the (sorted, disjoint)
// preempted intervals.
func overlay(base, pre []VCPUInterval) []VCPUInterval {
	if len(pre) == 0 {
		return base
	}
	out := make([]VCPUInterval, 0, len(base)+2*len(pre))
	j := 0
	for _, b := range base {
		cur := b
		for j < len(pre) && pre[j].Start < cur.End {
			p := pre[j]
			if p.End <= cur.Start {
				j++
				continue
			}
			if p.Start > cur.Start {
				head := cur
				head.End = p.Start
				out = append(out, head)
			}
			if p.End >= cur.End {
				// The wait continues into the next base interval.
				add := p
				add.Start, add.End = max(p.Start, cur.Start), cur.End
				out = appendMerged(out, add)
				cur.Start = cur.End
				break
			}
			add := p
			add.Start = max(p.Start, cur.Start)
			out = appendMerged(out, add)
			cur.Start = p.End
			j++
		}
		if cur.Start < cur.End {
			out = append(out, cur)
		}
	}
	return out
}

// appendMerged appends iv, merging it into the last interval when they
// are one preemption split by a base boundary.
func appendMerged(out []VCPUInterval, iv VCPUInterval) []VCPUInterval {
	if n := len(out); n > 0 && out[n-1].State == Preempted && out[n-1].CPU == iv.CPU && out[n-1].End == iv.Start {
		out[n-1].End = iv.End
		return out
	}
	return append(out, iv)
}

// Guest switch reasons (guest/include/reprise/trace.h).
const (
	switchPreempt = 0
	switchBlock   = 1
	switchYield   = 2
	switchExit    = 3
)

// loadThreads follows the guest kernel's context switches.
func (r *Run) loadThreads(db *eventdb.DB, run uint32) error {
	it := db.Merged(eventdb.Query{Run: run, Kinds: []eventdb.Kind{eventdb.KindSwitch}})
	var cur *Current
	state := func(tid uint32, t time.Duration, s ThreadState) {
		if tid == 0 {
			return // the idle loop is not a thread
		}
		th := r.Threads[tid]
		if th == nil {
			th = &Thread{TID: tid}
			r.Threads[tid] = th
		}
		if n := len(th.Intervals); n > 0 {
			th.Intervals[n-1].End = t
		}
		th.Intervals = append(th.Intervals, ThreadInterval{Span: Span{t, t}, State: s})
	}
	for it.Next() {
		e := it.Event()
		reason := uint64(switchPreempt)
		if len(e.Args) > 0 {
			reason = e.Args[0]
		}
		from, to := e.Thread, uint32(e.Addr)
		if cur == nil {
			r.Current = append(r.Current, Current{Span{r.Span.Start, e.Time}, from})
			state(from, r.Span.Start, ThreadRunning)
		} else {
			cur.End = e.Time
		}
		switch reason {
		case switchPreempt, switchYield:
			state(from, e.Time, ThreadRunnable)
		case switchBlock:
			state(from, e.Time, ThreadBlocked)
		case switchExit: // gone: its last interval ends here
			if th := r.Threads[from]; th != nil && len(th.Intervals) > 0 {
				th.Intervals[len(th.Intervals)-1].End = e.Time
			}
		}
		state(to, e.Time, ThreadRunning)
		r.Current = append(r.Current, Current{Span{e.Time, e.Time}, to})
		cur = &r.Current[len(r.Current)-1]
	}
	if err := it.Close(); err != nil {
		return err
	}
	if cur != nil {
		cur.End = max(r.Span.End, cur.Start)
	}
	for _, th := range r.Threads {
		if n := len(th.Intervals); n > 0 && th.Intervals[n-1].End == th.Intervals[n-1].Start {
			th.Intervals[n-1].End = max(r.Span.End, th.Intervals[n-1].Start) // open at the end
		}
		th.Intervals = slices.DeleteFunc(th.Intervals, func(iv ThreadInterval) bool { return iv.Len() <= 0 })
	}
	return nil
}

// Align moves r onto ref's time line, through their host views' common
// CLOCK_MONOTONIC: both must have been recorded on one host.
func (r *Run) Align(ref *Run) {
	d := r.start - ref.start
	if d == 0 {
		return
	}
	shift := func(s *Span) { s.Start += d; s.End += d }
	shift(&r.Span)
	for _, v := range r.VCPUs {
		for i := range v.Intervals {
			shift(&v.Intervals[i].Span)
		}
	}
	for i := range r.Current {
		shift(&r.Current[i].Span)
	}
	for _, th := range r.Threads {
		for i := range th.Intervals {
			shift(&th.Intervals[i].Span)
		}
	}
	for _, ss := range r.CPUs {
		for i := range ss {
			shift(&ss[i].Span)
		}
	}
}
