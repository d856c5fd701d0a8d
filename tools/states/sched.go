package states

import (
	"fmt"
	"sort"
	"time"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/host/hostview"
)

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
