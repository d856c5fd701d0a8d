package tracefs

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Event is one parsed trace_pipe line: a Switch, a Wakeup or a Lost.
type Event interface{ isEvent() }

// Switch is a sched_switch event: on CPU, Prev stopped running and Next
// started running at Time.
type Switch struct {
	Time      time.Duration // CLOCK_MONOTONIC (trace_clock "mono") since boot
	CPU       int
	PrevComm  string
	PrevPID   int
	PrevPrio  int
	PrevState string // "R" or "R+" = preempted; "S", "D", ... = blocked
	NextComm  string
	NextPID   int
	NextPrio  int
}

// Wakeup is a sched_wakeup (Waking false: the task was made runnable on
// TargetCPU) or a sched_waking (Waking true: the wakeup was requested; CPU
// is the waker's CPU) event.
type Wakeup struct {
	Time      time.Duration // CLOCK_MONOTONIC since boot
	CPU       int
	Comm      string
	PID       int
	Prio      int
	TargetCPU int
	Waking    bool
}

// Lost reports that the kernel dropped Count events on CPU because the
// trace buffer overflowed before it was read.
type Lost struct {
	CPU   int
	Count int
}

func (Switch) isEvent() {}
func (Wakeup) isEvent() {}
func (Lost) isEvent()   {}

// ErrOtherEvent is returned by ParseLine for well-formed lines of events
// this package does not decode.
var ErrOtherEvent = errors.New("tracefs: not a sched_switch/sched_wakeup/sched_waking line")

var (
	// Greedy (.*) for the comms makes the fixed keys bind to their
	// right-most occurrence, so comms containing spaces or even
	// "prev_pid=" parse correctly (a comm is at most 15 bytes, too short to
	// contain a whole fake key sequence).
	switchRE = regexp.MustCompile(`^prev_comm=(.*) prev_pid=(-?\d+) prev_prio=(-?\d+) prev_state=(\S+) ==> next_comm=(.*) next_pid=(-?\d+) next_prio=(-?\d+)$`)
	// "success=1" was printed by kernels before 4.3.
	wakeupRE = regexp.MustCompile(`^comm=(.*) pid=(-?\d+) prio=(-?\d+)(?: success=\d+)? target_cpu=(\d+)$`)
	lostRE   = regexp.MustCompile(`^CPU:(\d+) \[LOST (\d+) EVENTS\]$`)
)

// Event markers. The header's task comm (<= 15 bytes) is too short to
// contain one, so the first occurrence is the real one.
var markers = []struct {
	s    string
	kind string
}{
	{": sched_switch: ", "switch"},
	{": sched_wakeup: ", "wakeup"},
	{": sched_waking: ", "waking"},
}

// ParseLine parses one line of a trace_pipe in the default text format:
//
//	<comm>-<pid> [<cpu>] <flags> <secs>.<usecs>: <event>: <fields>
//
// It returns a Switch, a Wakeup or a Lost; ErrOtherEvent for other events;
// or an error describing why the line is malformed. It never panics.
func ParseLine(line string) (Event, error) {
	line = strings.TrimRight(line, "\r\n")
	if m := lostRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
		cpu, err1 := strconv.Atoi(m[1])
		n, err2 := strconv.Atoi(m[2])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("tracefs: parse lost-events line %q: %w", line, err)
		}
		return Lost{CPU: cpu, Count: n}, nil
	}
	idx, kind := -1, ""
	for _, mk := range markers {
		if i := strings.Index(line, mk.s); i >= 0 && (idx < 0 || i < idx) {
			idx, kind = i, mk.kind
		}
	}
	if idx < 0 {
		return nil, ErrOtherEvent
	}
	cpu, ts, err := parseHeader(line[:idx])
	if err != nil {
		return nil, fmt.Errorf("tracefs: parse header of %q: %w", line, err)
	}
	fields := line[idx+len(": sched_switch: "):] // all markers have the same length
	switch kind {
	case "switch":
		m := switchRE.FindStringSubmatch(fields)
		if m == nil {
			return nil, fmt.Errorf("tracefs: malformed sched_switch fields %q", fields)
		}
		n, err := atoiAll(m[2], m[3], m[6], m[7])
		if err != nil {
			return nil, fmt.Errorf("tracefs: sched_switch fields %q: %w", fields, err)
		}
		return Switch{Time: ts, CPU: cpu,
			PrevComm: m[1], PrevPID: n[0], PrevPrio: n[1], PrevState: m[4],
			NextComm: m[5], NextPID: n[2], NextPrio: n[3]}, nil
	default:
		m := wakeupRE.FindStringSubmatch(fields)
		if m == nil {
			return nil, fmt.Errorf("tracefs: malformed sched_%s fields %q", kind, fields)
		}
		n, err := atoiAll(m[2], m[3], m[4])
		if err != nil {
			return nil, fmt.Errorf("tracefs: sched_%s fields %q: %w", kind, fields, err)
		}
		return Wakeup{Time: ts, CPU: cpu, Comm: m[1], PID: n[0], Prio: n[1],
			TargetCPU: n[2], Waking: kind == "waking"}, nil
	}
}

// parseHeader extracts the CPU and timestamp from
// "<comm>-<pid> [<cpu>] <flags> <secs>.<frac>". It works from the right
// because the comm may contain spaces, dashes and brackets; the flags
// column is optional (trace_options noirq-info).
func parseHeader(h string) (cpu int, ts time.Duration, err error) {
	h = strings.TrimRight(h, " ")
	sp := strings.LastIndexByte(h, ' ')
	if sp < 0 {
		return 0, 0, errors.New("no timestamp")
	}
	if ts, err = parseTimestamp(h[sp+1:]); err != nil {
		return 0, 0, err
	}
	rest := h[:sp]
	open := strings.LastIndexByte(rest, '[')
	if open < 0 {
		return 0, 0, errors.New("no [cpu] column")
	}
	closing := strings.IndexByte(rest[open:], ']')
	if closing < 0 {
		return 0, 0, errors.New("unterminated [cpu] column")
	}
	cpu, err = strconv.Atoi(rest[open+1 : open+closing])
	if err != nil || cpu < 0 {
		return 0, 0, fmt.Errorf("bad cpu %q", rest[open+1:open+closing])
	}
	return cpu, ts, nil
}

// parseTimestamp parses "<secs>.<fraction>" (6 digits for "mono", up to 9
// with nanosecond output) exactly, without going through float64.
func parseTimestamp(s string) (time.Duration, error) {
	secStr, frac, _ := strings.Cut(s, ".")
	if !allDigits(secStr) || (frac != "" && !allDigits(frac)) || len(frac) > 9 || len(secStr) > 10 {
		return 0, fmt.Errorf("bad timestamp %q", s)
	}
	sec, err := strconv.ParseInt(secStr, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad timestamp %q: %w", s, err)
	}
	var ns int64
	if frac != "" {
		ns, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	return time.Duration(sec)*time.Second + time.Duration(ns), nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func atoiAll(ss ...string) ([]int, error) {
	out := make([]int, len(ss))
	for i, s := range ss {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}
