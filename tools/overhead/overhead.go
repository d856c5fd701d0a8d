// Package overhead reports what virtualisation cost a recorded VM: per
// vCPU, the share of time in the guest, in the VMM (by the exit reason
// that brought the vCPU out), preempted on the host and idle — the
// "Cycles" view of the seed papers, from the VMM's own timestamps and the
// host scheduler's.
package overhead

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/reprise-vm/reprise/tools/report"
	"github.com/reprise-vm/reprise/tools/states"
)

// Exit is the VMM time charged to one exit reason.
type Exit struct {
	Reason string
	Time   time.Duration
	Count  int // VMM stretches it opened
	Avg    time.Duration
}

// VCPU is one vCPU's breakdown.
type VCPU struct {
	Index   uint32
	Total   time.Duration
	ByState map[string]time.Duration // by states.VCPUState name
	Exits   []Exit                   // longest first
	Entries int                      // stays in the guest
}

// Report is what overhead prints.
type Report struct {
	VM      string
	Run     uint32 // the run's id in its event DB
	Span    states.Span
	Sched   bool
	Missing string
	VCPUs   []VCPU

	// Whether the run is incomplete, or newer incomplete runs were skipped.
	report.RunNote
}

// Analyze breaks down the time of each vCPU of r.
func Analyze(r *states.Run) *Report {
	rep := &Report{VM: r.Name, Run: r.ID, RunNote: r.Note, Span: r.Span, Sched: r.Sched, Missing: r.Missing}
	for _, v := range r.VCPUs {
		_, byExit := v.Totals()
		out := VCPU{Index: v.Index, Entries: v.Entries}
		out.ByState, out.Total = v.StateTimes()
		counts := map[uint64]int{}
		for _, iv := range v.Intervals {
			if iv.State == states.VMM {
				counts[iv.ExitReason]++
			}
		}
		for reason, t := range byExit {
			n := counts[reason]
			out.Exits = append(out.Exits, Exit{Reason: states.ExitName(reason), Time: t, Count: n, Avg: t / time.Duration(max(n, 1))})
		}
		slices.SortFunc(out.Exits, func(a, b Exit) int { return cmp.Or(cmp.Compare(b.Time, a.Time), cmp.Compare(a.Reason, b.Reason)) })
		rep.VCPUs = append(rep.VCPUs, out)
	}
	return rep
}

// WriteText prints the breakdown as aligned tables.
func (rep *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s: %v of execution\n", rep.VM, rep.Span.Len().Round(time.Millisecond))
	if !rep.Sched {
		fmt.Fprintf(w, "no host scheduling in this recording (%s): time preempted on the host counts as guest or VMM time\n", rep.Missing)
	}
	for _, v := range rep.VCPUs {
		t := report.Table{Title: fmt.Sprintf("\nvCPU %d: %d stays in the guest", v.Index, v.Entries),
			Columns: []report.Column{{Name: "WHERE"}, {Name: "TIME", Right: true}, {Name: "SHARE", Right: true}, {Name: "EXITS", Right: true}, {Name: "AVG", Right: true}}}
		share := func(d time.Duration) string { return report.Percent(float64(d), float64(v.Total)) }
		state := func(where string, s states.VCPUState) {
			d := v.ByState[s.String()]
			t.Add(where, d.Round(time.Microsecond), share(d), "", "")
		}
		state("guest", states.Running)
		state("VMM", states.VMM)
		for _, e := range v.Exits {
			t.Add("  "+e.Reason, e.Time.Round(time.Microsecond), share(e.Time), e.Count, e.Avg.Round(10*time.Nanosecond))
		}
		state("preempted", states.Preempted)
		state("idle", states.Idle)
		if err := t.Write(w); err != nil {
			return err
		}
	}
	return nil
}
