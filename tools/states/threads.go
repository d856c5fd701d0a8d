package states

import (
	"slices"
	"time"

	"github.com/reprise-vm/reprise/eventdb"
)

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
