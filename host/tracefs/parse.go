package tracefs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrOtherEvent is returned by ParseLine for well-formed lines of events
// this package does not decode.
var ErrOtherEvent = errors.New("tracefs: not a sched_switch/sched_wakeup/sched_waking/sched_migrate_task line")

// The parser is hand-written rather than regexps: with Options.AllSwitches
// a busy host produces thousands of lines per second, parsed on the host
// running the recorded VM. Regexps took ~11 µs per sched_switch line; this
// takes well under 1 µs and does not allocate.
//
// Comms (task names) may contain spaces and even "key=" text, so fields
// are found from the right, where the kernel's fixed keys are: the
// right-most occurrence of a key is the real one, since a comm always
// precedes its event's keys. A comm is at most 15 bytes, too short to
// contain a whole fake key sequence, which is what makes sched_switch's
// two comms separable (see parseSwitch).

type kind uint8

const (
	kindOther kind = iota
	kindSwitch
	kindWakeup
	kindMigrate
	kindLost
)

// parsed is the result of parse, kept unboxed so that the reader can
// reuse one and parse lines without allocating.
type parsed struct {
	kind kind
	sw   Switch
	wu   Wakeup
	mg   Migrate
	lost Lost
}

func (p *parsed) event() Event {
	switch p.kind {
	case kindSwitch:
		return p.sw
	case kindWakeup:
		return p.wu
	case kindMigrate:
		return p.mg
	case kindLost:
		return p.lost
	}
	return nil
}

// eventPrefix starts an event name in a line; eventNames follow it. The
// header's task comm (<= 15 bytes) is too short to contain a whole
// ": sched_<name>: ", so the first full match is the real one.
const eventPrefix = ": sched_"

var eventNames = [...]struct {
	name    string
	kind    kind
	waking  bool
	display string
}{
	{"switch: ", kindSwitch, false, "sched_switch"},
	{"wakeup: ", kindWakeup, false, "sched_wakeup"},
	{"waking: ", kindWakeup, true, "sched_waking"},
	{"migrate_task: ", kindMigrate, false, "sched_migrate_task"},
}

// ParseLine parses one line of a trace_pipe in the default text format:
//
//	<comm>-<pid> [<cpu>] <flags> <secs>.<usecs>: <event>: <fields>
//
// It returns a Switch, a Wakeup, a Migrate or a Lost; ErrOtherEvent for
// other events; or an error describing why the line is malformed. It
// never panics.
func ParseLine(line string) (Event, error) {
	var p parsed
	if err := parse(line, &p); err != nil {
		return nil, err
	}
	return p.event(), nil
}

// parse is ParseLine into p. The strings it stores share line's memory.
func parse(line string, p *parsed) error {
	line = strings.TrimRight(line, "\r\n")
	p.kind = kindOther
	if t := strings.TrimSpace(line); strings.HasPrefix(t, "CPU:") && strings.HasSuffix(t, "EVENTS]") {
		if lost, ok := parseLost(t); ok {
			p.kind, p.lost = kindLost, lost
			return nil
		}
	}
	idx, ev := -1, -1
	for off := 0; ev < 0; {
		i := strings.Index(line[off:], eventPrefix)
		if i < 0 {
			return ErrOtherEvent
		}
		idx = off + i
		off = idx + len(eventPrefix)
		for j, n := range eventNames {
			if strings.HasPrefix(line[off:], n.name) {
				ev = j
				break
			}
		}
	}
	name := eventNames[ev]
	cpu, ts, err := parseHeader(line[:idx])
	if err != nil {
		return fmt.Errorf("tracefs: parse header of %q: %w", line, err)
	}
	fields := line[idx+len(eventPrefix)+len(name.name):]
	var ok bool
	switch name.kind {
	case kindSwitch:
		p.sw, ok = parseSwitch(fields)
		p.sw.Time, p.sw.CPU = ts, cpu
	case kindWakeup:
		p.wu, ok = parseWakeup(fields)
		p.wu.Time, p.wu.CPU, p.wu.Waking = ts, cpu, name.waking
	case kindMigrate:
		p.mg, ok = parseMigrate(fields)
		p.mg.Time, p.mg.CPU = ts, cpu
	}
	if !ok {
		return fmt.Errorf("tracefs: malformed %s fields %q", name.display, fields)
	}
	p.kind = name.kind
	return nil
}

// switchArrow separates sched_switch's prev and next halves.
const switchArrow = " ==> next_comm="

// parseSwitch parses
//
//	prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s ==> next_comm=%s next_pid=%d next_prio=%d
//
// Either comm may contain switchArrow (it is exactly 15 bytes). The real
// one is the first after which the line parses: one inside prev_comm
// would leave no prev_pid/prio/state before it, and one inside next_comm
// is preceded by "next_comm=", not by a prev_state value.
func parseSwitch(f string) (e Switch, ok bool) {
	for off := 0; ; {
		i := strings.Index(f[off:], switchArrow)
		if i < 0 {
			return e, false
		}
		i += off
		if parseSwitchPrev(f[:i], &e) && parseSwitchNext(f[i+len(switchArrow):], &e) {
			return e, true
		}
		off = i + 1
	}
}

// parseSwitchPrev parses "prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s".
func parseSwitchPrev(s string, e *Switch) bool {
	// The state is flags like "R+" or "D|K": never empty, never a space.
	s, state, ok := cutLastToken(s, " prev_state=")
	if !ok || state == "" {
		return false
	}
	e.PrevState = state
	s, prio, ok1 := cutLastInt(s, " prev_prio=")
	s, pid, ok2 := cutLastInt(s, " prev_pid=")
	comm, ok3 := strings.CutPrefix(s, "prev_comm=")
	e.PrevComm, e.PrevPID, e.PrevPrio = comm, pid, prio
	return ok1 && ok2 && ok3
}

// parseSwitchNext parses "%s next_pid=%d next_prio=%d" (the next_comm value on).
func parseSwitchNext(s string, e *Switch) bool {
	s, prio, ok1 := cutLastInt(s, " next_prio=")
	s, pid, ok2 := cutLastInt(s, " next_pid=")
	e.NextComm, e.NextPID, e.NextPrio = s, pid, prio
	return ok1 && ok2
}

// parseWakeup parses sched_wakeup and sched_waking fields,
//
//	comm=%s pid=%d prio=%d target_cpu=%03d
//
// with " success=%d" before target_cpu on kernels before 4.3.
func parseWakeup(f string) (e Wakeup, ok bool) {
	s, target, ok1 := cutLastInt(f, " target_cpu=")
	if rest, n, ok := cutLastToken(s, " success="); ok && allDigits(n) {
		s = rest
	}
	comm, pid, prio, ok2 := parseTask(s)
	return Wakeup{Comm: comm, PID: pid, Prio: prio, TargetCPU: target}, ok1 && ok2
}

// parseMigrate parses sched_migrate_task fields,
//
//	comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d
//
// Some kernels append fields (" running=%d" on Android ones); any
// trailing "key=value" fields after dest_cpu are ignored.
func parseMigrate(f string) (e Migrate, ok bool) {
	i := strings.LastIndex(f, " dest_cpu=")
	if i < 0 {
		return e, false
	}
	val := f[i+len(" dest_cpu="):]
	if j := strings.IndexByte(val, ' '); j >= 0 {
		if !extraFields(val[j:]) {
			return e, false
		}
		val = val[:j]
	}
	dest, ok1 := parseInt(val)
	s, orig, ok2 := cutLastInt(f[:i], " orig_cpu=")
	comm, pid, prio, ok3 := parseTask(s)
	return Migrate{Comm: comm, PID: pid, Prio: prio, OrigCPU: orig, DestCPU: dest}, ok1 && ok2 && ok3
}

// extraFields reports whether s is a sequence of " key=value" fields.
func extraFields(s string) bool {
	for s != "" {
		if s[0] != ' ' {
			return false
		}
		tok, rest, _ := strings.Cut(s[1:], " ")
		if k, _, found := strings.Cut(tok, "="); !found || k == "" {
			return false
		}
		if rest != "" {
			rest = " " + rest
		}
		s = rest
	}
	return true
}

// parseTask parses "comm=%s pid=%d prio=%d", the start of wakeup and
// migrate fields.
func parseTask(s string) (comm string, pid, prio int, ok bool) {
	s, prio, ok1 := cutLastInt(s, " prio=")
	s, pid, ok2 := cutLastInt(s, " pid=")
	comm, ok3 := strings.CutPrefix(s, "comm=")
	return comm, pid, prio, ok1 && ok2 && ok3
}

// cutLastInt splits s ending in key followed by an integer. It looks at
// the end of s only, which makes it the hot path's main saving over
// searching for the key: the result is the same, since key's "=" cannot
// be part of the integer.
func cutLastInt(s, key string) (before string, n int, ok bool) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if i > 0 && s[i-1] == '-' {
		i--
	}
	if !strings.HasSuffix(s[:i], key) {
		return s, 0, false
	}
	n, ok = parseInt(s[i:])
	return s[:i-len(key)], n, ok
}

// cutLastToken splits s before its last space-separated token, which must
// start with key (" key"); it returns the rest of the token.
func cutLastToken(s, key string) (before, val string, ok bool) {
	i := strings.LastIndexByte(s, ' ')
	if i < 0 {
		return s, "", false
	}
	val, ok = strings.CutPrefix(s[i:], key)
	return s[:i], val, ok
}

// parseLost parses "CPU:%d [LOST %lu EVENTS]", or "CPU:%d [LOST EVENTS]"
// which the kernel prints when it does not know how many were lost.
func parseLost(t string) (Lost, bool) {
	cpuStr, rest, _ := strings.Cut(t[len("CPU:"):], " ")
	cpu, ok := parseInt(cpuStr)
	if !ok || cpu < 0 {
		return Lost{}, false
	}
	if rest == "[LOST EVENTS]" {
		return Lost{CPU: cpu}, true
	}
	count, ok := strings.CutPrefix(rest, "[LOST ")
	count, ok2 := strings.CutSuffix(count, " EVENTS]")
	if !ok || !ok2 || !allDigits(count) {
		return Lost{}, false
	}
	n, err := strconv.ParseInt(count, 10, 0)
	if err != nil {
		return Lost{}, false
	}
	return Lost{CPU: cpu, Count: int(n)}, true
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
	cpu, ok := parseInt(rest[open+1 : open+closing])
	if !ok || cpu < 0 {
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
	var sec, ns int64
	for i := 0; i < len(secStr); i++ {
		sec = sec*10 + int64(secStr[i]-'0')
	}
	for i := 0; i < 9; i++ {
		ns *= 10
		if i < len(frac) {
			ns += int64(frac[i] - '0')
		}
	}
	return time.Duration(sec)*time.Second + time.Duration(ns), nil
}

// parseInt parses an optionally negative decimal integer of at most 10
// digits: every field parsed is a 32-bit int in the kernel, so longer
// numbers are malformed, and the limit rules out overflow.
func parseInt(s string) (int, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if len(s) > 10 || !allDigits(s) {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	if neg {
		n = -n
	}
	return n, true
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
