// Package timeline writes a run's states (package states) as a trace that
// ui.perfetto.dev opens: one process per recorded VM with a track per vCPU
// (RUNNING, VMM with its exit reason, IDLE, PREEMPTED) and per guest
// thread (running, runnable), a process of a Linux program's connections
// through published ports with a track each (a slice per request and its
// reply), and a "host" process with a track per host CPU showing which
// host thread ran.
//
// The format is Perfetto's own protobuf (TrackEvent, names interned),
// which Perfetto loads at sizes where its importer of the legacy Chrome
// JSON gives up; the JSON is still written on request (Options.JSON) for
// chrome://tracing and older tools.
//
// A long recording has millions of intervals, more than a trace viewer
// loads comfortably; above Options.MaxEvents, stretches shorter than a
// quantum are merged into one "mixed" slice per stretch, whose arguments
// say what it held, and the quantum doubles until the trace fits.
package timeline

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/reprise-vm/reprise/tools/states"
)

// DefaultMaxEvents is where aggregation starts: for the protobuf format;
// the JSON one starts at DefaultMaxJSONEvents, as Perfetto's JSON importer
// slows to a halt well before.
const (
	DefaultMaxEvents     = 10_000_000
	DefaultMaxJSONEvents = 1_000_000
)

// Options tune the trace.
type Options struct {
	MaxEvents int  // 0: DefaultMaxEvents (DefaultMaxJSONEvents for JSON)
	JSON      bool // Chrome trace-event JSON instead of Perfetto's protobuf
}

// Stats says what was written.
type Stats struct {
	Intervals int           // intervals in the runs
	Events    int           // slices written
	Quantum   time.Duration // stretches shorter than this were merged (0: none)
	Limit     int           // the most slices the trace was to hold
}

// slice is one interval of one track.
type slice struct {
	states.Span
	name string
}

// track is one row of the trace.
type track struct {
	pid, tid int
	name     string
	slices   []slice
}

// Write writes runs (the first is the reference; the others already
// aligned onto it with states.Align) as one trace.
func Write(w io.Writer, runs []*states.Run, o Options) (Stats, error) {
	limit := o.MaxEvents
	switch {
	case limit > 0:
	case o.JSON:
		limit = DefaultMaxJSONEvents
	default:
		limit = DefaultMaxEvents
	}
	var tracks []track
	var procs []string // process i+1's name
	for i, r := range runs {
		procs = append(procs, "VM "+r.Name)
		tracks = append(tracks, vmTracks(i+1, r)...)
	}
	for _, r := range runs {
		if len(r.Conns) > 0 {
			procs = append(procs, "connections of "+r.Name)
			tracks = append(tracks, connTracks(len(procs), r)...)
		}
	}
	if len(runs) > 0 && runs[0].Sched {
		procs = append(procs, "host")
		tracks = append(tracks, hostTracks(len(procs), runs)...)
	}
	st := Stats{Limit: limit}
	for _, t := range tracks {
		st.Intervals += len(t.slices)
	}
	var origin time.Duration
	if len(runs) > 0 {
		origin = runs[0].Span.Start
	}
	// The quantum doubles until the merged trace fits.
	for q := time.Duration(0); ; q = max(2*q, time.Microsecond) {
		n := 0
		for _, t := range tracks {
			n += len(merge(t.slices, q))
		}
		if n <= limit || q > time.Hour {
			st.Quantum, st.Events = q, n
			break
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if !o.JSON {
		if err := writeProto(bw, procs, tracks, st.Quantum, origin); err != nil {
			return st, err
		}
		return st, bw.Flush()
	}
	enc := encoder{w: bw, origin: origin}
	enc.raw(`{"displayTimeUnit":"ns","traceEvents":[`)
	for i, name := range procs {
		enc.meta("process_name", i+1, 0, name)
		enc.metaSort(i+1, i+1)
	}
	for _, t := range tracks {
		enc.meta("thread_name", t.pid, t.tid, t.name)
		for _, s := range merge(t.slices, st.Quantum) {
			enc.slice(t.pid, t.tid, s)
		}
	}
	enc.raw("\n]}\n")
	if enc.err != nil {
		return st, enc.err
	}
	return st, bw.Flush()
}

// vmTracks are a VM's vCPU and guest thread tracks.
func vmTracks(pid int, r *states.Run) []track {
	var out []track
	for _, v := range r.VCPUs {
		t := track{pid: pid, tid: int(v.Index) + 1, name: fmt.Sprintf("vCPU %d (host tid %d)", v.Index, v.TID)}
		for _, iv := range v.Intervals {
			name := iv.State.String()
			switch iv.State {
			case states.VMM:
				name = "VMM " + states.ExitName(iv.ExitReason)
			case states.Preempted:
				name = fmt.Sprintf("PREEMPTED (host CPU %d)", iv.CPU)
			}
			t.slices = append(t.slices, slice{iv.Span, name})
		}
		out = append(out, t)
	}
	for _, tid := range r.ThreadIDs() {
		t := track{pid: pid, tid: 1000 + int(tid), name: fmt.Sprintf("guest thread %d", tid)}
		for _, iv := range r.Threads[tid].Intervals {
			if iv.State != states.ThreadBlocked {
				t.slices = append(t.slices, slice{iv.Span, iv.State.String()})
			}
		}
		out = append(out, t)
	}
	return out
}

// connTracks show a Linux program's door connections, one track each: a
// slice per request and its reply, as the program served them.
func connTracks(pid int, r *states.Run) []track {
	var out []track
	for _, c := range r.Conns {
		t := track{pid: pid, tid: int(c.ID%(1<<31)) + 1, name: fmt.Sprintf("connection %d", c.ID)}
		if c.ID >= 1<<31 {
			t.name = fmt.Sprintf("outgoing connection %d", c.ID-1<<31)
		}
		for _, x := range c.Exchanges {
			t.slices = append(t.slices, slice{x.Span, fmt.Sprintf("%d B in, %d B out", x.In, x.Out)})
		}
		out = append(out, t)
	}
	return out
}

// hostTracks show what ran on each host CPU, naming recorded vCPUs.
func hostTracks(pid int, runs []*states.Run) []track {
	r := runs[0]
	names := func(tid uint32) string {
		for _, x := range runs {
			if v := x.VCPUByTID(tid); v != nil {
				return fmt.Sprintf("%s vCPU %d", x.Name, v.Index)
			}
		}
		return fmt.Sprintf("%s (%d)", r.Comm(tid), tid)
	}
	var out []track
	for _, cpu := range r.HostCPUs() {
		t := track{pid: pid, tid: int(cpu) + 1, name: fmt.Sprintf("CPU %d", cpu)}
		for _, s := range r.CPUs[cpu] {
			if s.TID != 0 {
				t.slices = append(t.slices, slice{s.Span, names(s.TID)})
			}
		}
		out = append(out, t)
	}
	return out
}

// merge coalesces runs of slices shorter than q into "mixed" slices.
func merge(in []slice, q time.Duration) []slice {
	if q == 0 {
		return in
	}
	var out []slice
	var mixed *slice
	count := 0
	for _, s := range in {
		if s.Len() >= q {
			mixed = nil
			out = append(out, s)
			continue
		}
		if mixed != nil && s.Start-mixed.End < q {
			mixed.End = s.End
			count++
			mixed.name = "mixed (" + strconv.Itoa(count) + " intervals)"
			continue
		}
		out = append(out, s)
		mixed, count = &out[len(out)-1], 1
	}
	return out
}

// encoder writes trace events; the first error sticks.
type encoder struct {
	w      *bufio.Writer
	origin time.Duration
	n      int
	err    error
}

func (e *encoder) raw(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *encoder) sep() {
	if e.n > 0 {
		e.raw(",")
	}
	e.raw("\n")
	e.n++
}

func (e *encoder) meta(kind string, pid, tid int, name string) {
	q, _ := json.Marshal(name)
	e.sep()
	e.raw(fmt.Sprintf(`{"ph":"M","name":%q,"pid":%d,"tid":%d,"args":{"name":%s}}`, kind, pid, tid, q))
}

func (e *encoder) metaSort(pid, index int) {
	e.sep()
	e.raw(fmt.Sprintf(`{"ph":"M","name":"process_sort_index","pid":%d,"args":{"sort_index":%d}}`, pid, index))
}

func (e *encoder) slice(pid, tid int, s slice) {
	q, _ := json.Marshal(s.name)
	e.sep()
	e.raw(`{"ph":"X","name":`)
	e.raw(string(q))
	e.raw(`,"pid":` + strconv.Itoa(pid) + `,"tid":` + strconv.Itoa(tid))
	e.raw(`,"ts":` + micros(s.Start-e.origin) + `,"dur":` + micros(s.Len()) + "}")
}

// micros formats a duration in the format's microseconds, to the ns.
func micros(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/1e3, 'f', -1, 64)
}
