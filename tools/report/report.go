// Package report renders the tools' results: aligned text tables for a
// terminal, and JSON for scripts.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reprise-vm/reprise/eventdb"
)

// RunNote is what a report must say about the run it covers besides its
// id. Reports embed it, so in their JSON its fields sit beside the run's.
type RunNote struct {
	// Incomplete says the run's replay stopped early (it was killed or
	// interrupted, or it diverged): the run's events stop there, and the
	// report covers only what came before.
	Incomplete bool `json:"incomplete"`
	// SkippedIncomplete lists the incomplete runs, newer than this one,
	// passed over when the run was chosen by default.
	SkippedIncomplete []uint32 `json:"skipped_incomplete,omitempty"`
}

// NoteOf is the RunNote of a run eventdb.DB.ChooseRun picked.
func NoteOf(c *eventdb.Choice) RunNote {
	return RunNote{Incomplete: !c.Run.Complete, SkippedIncomplete: c.Skipped}
}

// Column is a table column; numbers align right.
type Column struct {
	Name  string
	Right bool
}

// Table is a titled table of text cells.
type Table struct {
	Title   string
	Columns []Column
	Rows    [][]string
}

// Add appends a row; cells are formatted with fmt's %v.
func (t *Table) Add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = fmt.Sprint(c)
	}
	t.Rows = append(t.Rows, row)
}

// Write renders the table with every column as wide as its widest cell,
// two spaces apart, under its title and a header line.
func (t *Table) Write(w io.Writer) error {
	width := make([]int, len(t.Columns))
	for i, c := range t.Columns {
		width[i] = utf8.RuneCountInString(c.Name)
	}
	for _, r := range t.Rows {
		for i := range min(len(r), len(width)) {
			width[i] = max(width[i], utf8.RuneCountInString(r[i]))
		}
	}
	var b strings.Builder
	if t.Title != "" {
		b.WriteString(t.Title + "\n")
	}
	line := func(cells []string) {
		var l strings.Builder
		for i := range width {
			cell := ""
			if i < len(cells) {
				cell = cells[i]
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(cell))
			if i > 0 {
				l.WriteString("  ")
			}
			if t.Columns[i].Right {
				l.WriteString(pad + cell)
			} else {
				l.WriteString(cell + pad)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	names := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		names[i] = c.Name
	}
	line(names)
	for _, r := range t.Rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JSON writes v as indented JSON.
func JSON(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

// Percent formats part of whole as "12.3%" ("-" when whole is 0).
func Percent(part, whole float64) string {
	if whole == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*part/whole)
}

// Duration formats a duration for a table cell, rounded to three or four
// significant digits ("0" for zero).
func Duration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return d.Round(100 * time.Nanosecond).String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
