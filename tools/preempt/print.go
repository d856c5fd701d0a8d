package preempt

import (
	"fmt"
	"io"
	"time"

	"github.com/reprise-vm/reprise/tools/report"
	"github.com/reprise-vm/reprise/tools/states"
)

// TextOptions bound the text report.
type TextOptions struct {
	Top     int // rows per ranking (0: all)
	Entries int // execution-flow entries printed (0: all)
}

// WriteText prints the report as aligned tables.
func (rep *Report) WriteText(w io.Writer, o TextOptions) error {
	fmt.Fprintf(w, "%s: %v of execution, from %v\n", rep.VM, report.Duration(rep.Span.Len()), report.Duration(rep.Span.Start))
	if len(rep.Others) > 0 {
		fmt.Fprintf(w, "other VMs recorded on this host at the same time: %v\n", rep.Others)
	}
	if !rep.Sched {
		fmt.Fprintf(w, "no host scheduling in this recording (%s): preemption cannot be seen, only VMM and idle time\n", rep.Missing)
	}
	fmt.Fprintln(w)
	t := report.Table{Title: "vCPU states", Columns: []report.Column{{Name: "VCPU"}, {Name: "HOST TID", Right: true}}}
	for _, s := range states.VCPUStates() {
		t.Columns = append(t.Columns, report.Column{Name: s.String(), Right: true})
	}
	t.Columns = append(t.Columns, report.Column{Name: "STEAL", Right: true}, report.Column{Name: "PREEMPTIONS", Right: true})
	for _, v := range rep.VCPUs {
		row := []any{v.Index, v.TID}
		for _, s := range states.VCPUStates() {
			row = append(row, report.Percent(float64(v.ByState[s.String()]), float64(v.Total)))
		}
		t.Add(append(row, report.Duration(v.Steal), v.Preemptions)...)
	}
	if err := t.Write(w); err != nil {
		return err
	}
	for _, v := range rep.VCPUs {
		if len(v.By) == 0 {
			continue
		}
		fmt.Fprintln(w)
		by := totalsTable(fmt.Sprintf("who ran while vCPU %d was preempted", v.Index), v.By, v.Steal, o.Top)
		if err := by.Write(w); err != nil {
			return err
		}
	}
	if len(rep.Virtual) > 0 {
		fmt.Fprintln(w)
		vt := report.Table{Title: "guest threads virtually preempted (current in the guest, their vCPU waiting on the host)",
			Columns: []report.Column{{Name: "THREAD"}, {Name: "TIME", Right: true}, {Name: "TIMES", Right: true}}}
		for i, v := range rep.Virtual {
			if o.Top > 0 && i == o.Top {
				break
			}
			vt.Add(v.TID, report.Duration(v.Time), v.Count)
		}
		if err := vt.Write(w); err != nil {
			return err
		}
	}
	if f := rep.Flow; f != nil {
		return f.writeText(w, o)
	}
	return nil
}

func (f *Flow) writeText(w io.Writer, o TextOptions) error {
	fmt.Fprintf(w, "\nexecution flow of thread %d: it wanted the CPU for %v and ran %v (%s); the rest went to\n",
		f.TID, report.Duration(f.Wanted), report.Duration(f.Ran), report.Percent(float64(f.Ran), float64(f.Wanted)))
	for _, tbl := range []*report.Table{
		totalsTable("per system", f.PerSystem, f.Wanted, 0),
		totalsTable("per holder", f.PerHolder, f.Wanted, o.Top),
	} {
		fmt.Fprintln(w)
		if err := tbl.Write(w); err != nil {
			return err
		}
	}
	title := "flow"
	entries := f.Entries
	if o.Entries > 0 && len(entries) > o.Entries {
		title = fmt.Sprintf("flow (first %d of %d entries; --entries 0 prints all)", o.Entries, len(entries))
		entries = entries[:o.Entries]
	}
	t := report.Table{Title: title, Columns: []report.Column{{Name: "START", Right: true}, {Name: "DURATION", Right: true}, {Name: "WHO"}, {Name: "SYSTEM"}}}
	for _, e := range entries {
		t.Add(report.Duration(e.Start), report.Duration(e.Len()), e.Who, e.System)
	}
	fmt.Fprintln(w)
	return t.Write(w)
}

func totalsTable(title string, ts []Total, whole time.Duration, top int) *report.Table {
	t := &report.Table{Title: title, Columns: []report.Column{{Name: "WHO"}, {Name: "SYSTEM"}, {Name: "TIME", Right: true}, {Name: "SHARE", Right: true}, {Name: "TIMES", Right: true}}}
	for i, x := range ts {
		if top > 0 && i == top {
			break
		}
		who := x.Who
		if who == "" {
			who = "-"
		}
		t.Add(who, x.System, report.Duration(x.Time), report.Percent(float64(x.Time), float64(whole)), x.Count)
	}
	return t
}
