// Package preempt answers the seed papers' question about a recorded VM:
// why did a guest task take longer than its CPU time — who took the CPU,
// the host or another VM? From a run's states (package states) it reports
// each vCPU's time per state and steal time with who ran instead, the
// guest threads virtually preempted (current in the guest while their
// vCPU waited on the host), and the execution flow of one guest thread:
// the ordered stretches of whatever held the CPU while that thread wanted
// it, resolved to a guest thread, the VMM, a host thread, or — given the
// run of another VM recorded at the same time on the same host — that
// VM's guest thread.
package preempt

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/reprise-vm/reprise/tools/report"
	"github.com/reprise-vm/reprise/tools/states"
)

// System says which layer an entry of the execution flow belongs to.
type System string

// SystemHost is every host thread that is no recorded vCPU.
const SystemHost System = "host"

// Guest and VMM name a recorded VM's layers.
func Guest(vm string) System { return System(vm + " guest") }
func VMM(vm string) System   { return System(vm + " VMM") }

// Holder is who held the CPU over a stretch of time.
type Holder struct {
	Who    string
	System System
}

// Entry is one stretch of the execution flow.
type Entry struct {
	states.Span
	Holder
}

// Total is the time a holder (or a system) held the CPU, in how many
// stretches.
type Total struct {
	Holder
	Time  time.Duration
	Count int
}

// VCPU is one vCPU's time per state.
type VCPU struct {
	Index   uint32
	TID     uint32
	Total   time.Duration
	ByState map[string]time.Duration // by states.VCPUState name
	// Steal is its preempted time; Preemptions how many times it began.
	Steal       time.Duration
	Preemptions int
	// By is who ran on the host CPUs it waited on, longest first.
	By []Total
}

// Virtual is a guest thread's time current in the guest while its vCPU
// was preempted.
type Virtual struct {
	TID   uint32
	Time  time.Duration
	Count int
}

// Flow is the execution flow of one guest thread.
type Flow struct {
	TID uint32
	// Wanted is its time running or runnable in the guest; Ran the part
	// it actually executed.
	Wanted, Ran time.Duration
	Entries     []Entry
	PerHolder   []Total // longest first, the thread itself included
	PerSystem   []Total
}

// Report is what preempt prints.
type Report struct {
	VM      string
	Run     uint32 // the run's id in its event DB
	Span    states.Span
	Sched   bool
	Missing string
	Others  []string // the other VMs resolved
	VCPUs   []VCPU
	Virtual []Virtual
	Flow    *Flow

	// Whether the run is incomplete, or newer incomplete runs were skipped.
	report.RunNote
}

// Options choose the execution flow.
type Options struct {
	// Thread, if set, asks for that guest thread's execution flow.
	Thread *uint32
	// Windows, if set, limit the flow to these stretches of time (one
	// slow iteration of a periodic task, say).
	Windows []states.Span
}

// Analyze builds the report of run r; others are runs of VMs recorded at
// the same time on the same host, already aligned onto r (states.Align).
func Analyze(r *states.Run, others []*states.Run, o Options) (*Report, error) {
	a := &analyzer{r: r, others: others}
	rep := &Report{VM: r.Name, Run: r.ID, RunNote: r.Note, Span: r.Span, Sched: r.Sched, Missing: r.Missing}
	for _, o := range others {
		rep.Others = append(rep.Others, o.Name)
	}
	for _, v := range r.VCPUs {
		rep.VCPUs = append(rep.VCPUs, a.vcpu(v))
	}
	rep.Virtual = a.virtual()
	if o.Thread != nil {
		th := r.Threads[*o.Thread]
		if th == nil {
			return nil, fmt.Errorf("preempt: %s has no guest thread %d (threads: %v)", r.Name, *o.Thread, r.ThreadIDs())
		}
		windows := o.Windows
		if len(windows) == 0 {
			windows = []states.Span{r.Span}
		}
		rep.Flow = a.flow(th, windows)
	}
	return rep, nil
}

type analyzer struct {
	r      *states.Run
	others []*states.Run
}

func (a *analyzer) vcpu(v *states.VCPU) VCPU {
	out := VCPU{Index: v.Index, TID: v.TID}
	out.ByState, out.Total = v.StateTimes()
	out.Steal = out.ByState[states.Preempted.String()]
	var by []Entry
	for _, iv := range v.Intervals {
		if iv.State != states.Preempted {
			continue
		}
		out.Preemptions++
		by = append(by, a.onHost(iv)...)
	}
	out.By = totals(by, func(e Entry) Holder { return e.Holder })
	return out
}

// virtual sums, per guest thread, its time current while the vCPU was
// preempted.
func (a *analyzer) virtual() []Virtual {
	per := map[uint32]*Virtual{}
	for _, v := range a.r.VCPUs {
		for _, iv := range v.Intervals {
			if iv.State != states.Preempted {
				continue
			}
			for _, c := range a.r.CurrentBetween(iv.Span) {
				if c.TID == 0 {
					continue
				}
				p := per[c.TID]
				if p == nil {
					p = &Virtual{TID: c.TID}
					per[c.TID] = p
				}
				p.Time += c.Len()
				p.Count++
			}
		}
	}
	out := make([]Virtual, 0, len(per))
	for _, p := range per {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(x, y Virtual) int { return cmp.Or(cmp.Compare(y.Time, x.Time), cmp.Compare(x.TID, y.TID)) })
	return out
}

// flow walks the thread's wanting intervals within windows and resolves
// who held the CPU.
func (a *analyzer) flow(th *states.Thread, windows []states.Span) *Flow {
	f := &Flow{TID: th.TID}
	self := a.guestThread(a.r, th.TID)
	for _, w := range windows {
		for _, ti := range th.Intervals {
			span, ok := ti.Clip(w)
			if !ok || ti.State == states.ThreadBlocked {
				continue
			}
			f.Wanted += span.Len()
			if ti.State == states.ThreadRunning {
				f.Entries = appendEntries(f.Entries, a.onVCPU(a.r, span, th.TID, a.onHost)...)
				continue
			}
			for _, c := range a.r.CurrentBetween(span) {
				f.Entries = appendEntries(f.Entries, a.onVCPU(a.r, c.Span, c.TID, a.onHost)...)
			}
		}
	}
	for _, e := range f.Entries {
		if e.Holder == self {
			f.Ran += e.Len()
		}
	}
	f.PerHolder = totals(f.Entries, func(e Entry) Holder { return e.Holder })
	f.PerSystem = totals(f.Entries, func(e Entry) Holder { return Holder{System: e.System} })
	return f
}

// onVCPU resolves who held the CPU over span while guest thread tid was
// current on r's vCPU: tid itself, the VMM, or, while the vCPU was
// preempted, what preempted resolves.
func (a *analyzer) onVCPU(r *states.Run, span states.Span, tid uint32, preempted func(states.VCPUInterval) []Entry) []Entry {
	var out []Entry
	for _, v := range r.VCPUs { // one vCPU per machine today
		for _, iv := range v.Between(span) {
			switch iv.State {
			case states.Running:
				out = append(out, Entry{iv.Span, a.guestThread(r, tid)})
			case states.VMM:
				out = append(out, Entry{iv.Span, Holder{"VMM: " + states.ExitName(iv.ExitReason), VMM(r.Name)}})
			case states.Idle:
				out = append(out, Entry{iv.Span, Holder{"idle", Guest(r.Name)}})
			case states.Preempted:
				out = append(out, preempted(iv)...)
			}
		}
	}
	return out
}

func (a *analyzer) guestThread(r *states.Run, tid uint32) Holder {
	if tid == 0 {
		return Holder{"idle", Guest(r.Name)}
	}
	return Holder{fmt.Sprintf("thread %d", tid), Guest(r.Name)}
}

// onHost resolves what ran on the host CPU a preempted vCPU waited on.
func (a *analyzer) onHost(iv states.VCPUInterval) []Entry {
	if iv.CPU < 0 {
		return []Entry{{iv.Span, Holder{"unknown (no host CPU)", SystemHost}}}
	}
	var out []Entry
	at := iv.Start
	for _, s := range a.r.SlicesBetween(uint32(iv.CPU), iv.Span) {
		if s.Start > at {
			out = append(out, Entry{states.Span{Start: at, End: s.Start}, Holder{"unknown (not traced)", SystemHost}})
		}
		out = append(out, a.hostThread(s)...)
		at = s.End
	}
	if at < iv.End {
		out = append(out, Entry{states.Span{Start: at, End: iv.End}, Holder{"unknown (not traced)", SystemHost}})
	}
	return out
}

// hostThread names a host thread's slice: another recorded VM's vCPU is
// resolved to what that VM did (its guest thread, its VMM).
func (a *analyzer) hostThread(s states.HostSlice) []Entry {
	for _, o := range a.others {
		if v := o.VCPUByTID(s.TID); v != nil {
			// The host says o's vCPU thread ran; where o's own view
			// disagrees (it saw itself preempted), trust the host.
			ran := func(iv states.VCPUInterval) []Entry {
				return []Entry{{iv.Span, Holder{"vCPU thread", VMM(o.Name)}}}
			}
			var out []Entry
			for _, c := range o.CurrentBetween(s.Span) {
				out = append(out, a.onVCPU(o, c.Span, c.TID, ran)...)
			}
			if len(out) > 0 {
				return out
			}
			return ran(states.VCPUInterval{Span: s.Span})
		}
	}
	if v := a.r.VCPUByTID(s.TID); v != nil {
		return []Entry{{s.Span, Holder{"own vCPU", VMM(a.r.Name)}}}
	}
	who := fmt.Sprintf("tid %d", s.TID)
	if comm := a.r.Comm(s.TID); comm != who {
		who = fmt.Sprintf("%s (tid %d)", comm, s.TID)
	}
	return []Entry{{s.Span, Holder{who, SystemHost}}}
}

// appendEntries appends, merging an entry into the last when one holder
// continues.
func appendEntries(out []Entry, es ...Entry) []Entry {
	for _, e := range es {
		if e.Len() <= 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Holder == e.Holder && out[n-1].End == e.Start {
			out[n-1].End = e.End
			continue
		}
		out = append(out, e)
	}
	return out
}

// totals sums entries per key, longest first.
func totals(es []Entry, key func(Entry) Holder) []Total {
	per := map[Holder]*Total{}
	for _, e := range appendEntries(nil, es...) {
		k := key(e)
		t := per[k]
		if t == nil {
			t = &Total{Holder: k}
			per[k] = t
		}
		t.Time += e.Len()
		t.Count++
	}
	out := make([]Total, 0, len(per))
	for _, t := range per {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(x, y Total) int {
		return cmp.Or(cmp.Compare(y.Time, x.Time), cmp.Compare(x.System, y.System), cmp.Compare(x.Who, y.Who))
	})
	return out
}
