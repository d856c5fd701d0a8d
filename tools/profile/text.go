package profile

import (
	"fmt"
	"io"

	"github.com/reprise-vm/reprise/tools/report"
)

// WriteText writes the profile as aligned tables: the functions by self
// samples (weighed, in a weighted profile), with perThread each thread's
// functions (when there are several threads), and the call graph if it
// was built. top limits every table's rows (0: all).
func (p *Profile) WriteText(w io.Writer, top int, perThread bool) error {
	if _, err := fmt.Fprintf(w, "profile: %s\n\n", p.Describe()); err != nil {
		return err
	}
	title := "functions by self samples"
	if p.Weighted {
		title += ", each weighed by the cycles it stands for"
	}
	if err := funcTable(titled(title, len(p.Functions), top), p.Functions, top).Write(w); err != nil {
		return err
	}
	if p.Files != nil {
		if err := writeSection(w, p.fileTable(top)); err != nil {
			return err
		}
	}
	// With one thread, its table would repeat the one above.
	if perThread && len(p.Threads) > 1 {
		for _, t := range p.Threads {
			title := fmt.Sprintf("thread %d: %d samples, %s", t.Thread, t.Samples, percent(t.Pct))
			if err := writeSection(w, funcTable(titled(title, len(t.Functions), top), t.Functions, top)); err != nil {
				return err
			}
		}
	}
	if p.CallGraph != nil {
		return writeSection(w, p.edgeTable(top))
	}
	return nil
}

// titled adds "(top N of M)" to a table's title when rows are cut.
func titled(title string, rows, top int) string {
	if top > 0 && top < rows {
		return fmt.Sprintf("%s (top %d of %d)", title, top, rows)
	}
	return title
}

func writeSection(w io.Writer, t *report.Table) error {
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return t.Write(w)
}

// funcTable lists functions with their rank; the percentages are the
// FuncStats' own (shares of the profile's or of one thread's time or
// samples).
func funcTable(title string, fs []FuncStat, top int) *report.Table {
	t := &report.Table{Title: title, Columns: []report.Column{
		{Name: "rank", Right: true}, {Name: "function"},
		{Name: "self", Right: true}, {Name: "self%", Right: true},
		{Name: "total", Right: true}, {Name: "total%", Right: true},
	}}
	for i, f := range first(fs, top) {
		t.Add(i+1, f.Function, f.Self, percent(f.SelfPct), f.Total, percent(f.TotalPct))
	}
	return t
}

// fileTable lists the files the sampled code was in.
func (p *Profile) fileTable(top int) *report.Table {
	t := &report.Table{Title: titled("files by self samples", len(p.Files), top), Columns: []report.Column{
		{Name: "file"}, {Name: "self", Right: true}, {Name: "self%", Right: true},
	}}
	for _, f := range first(p.Files, top) {
		t.Add(f.File, f.Self, percent(f.SelfPct))
	}
	return t
}

func (p *Profile) edgeTable(top int) *report.Table {
	t := &report.Table{Title: titled("call graph: caller → callee", len(p.CallGraph), top), Columns: []report.Column{
		{Name: "caller"}, {Name: "callee"}, {Name: "samples", Right: true}, {Name: "%", Right: true},
	}}
	for _, e := range first(p.CallGraph, top) {
		t.Add(e.Caller, e.Callee, e.Samples, percent(e.Pct))
	}
	return t
}

// percent formats a percentage as report.Percent does.
func percent(v float64) string { return report.Percent(v, 100) }

// WriteJSON writes the profile as JSON, every list cut to its first top
// entries (0: all).
func (p *Profile) WriteJSON(w io.Writer, top int) error {
	out := *p
	out.Functions = first(p.Functions, top)
	out.Files = first(p.Files, top)
	out.Threads = make([]ThreadProfile, len(p.Threads))
	for i, t := range p.Threads {
		t.Functions = first(t.Functions, top)
		out.Threads[i] = t
	}
	out.CallGraph = first(p.CallGraph, top)
	return report.JSON(w, &out)
}

// first returns the first n of s (all of s when n <= 0).
func first[T any](s []T, n int) []T {
	if n > 0 && n < len(s) {
		return s[:n]
	}
	return s
}
