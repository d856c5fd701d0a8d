package tracefs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// feed runs lines through a session's line handling as the reader does
// and returns what the handlers received, in order.
func feed(s *Session, lines ...string) []Event {
	var got []Event
	d := dispatcher{h: Handlers{
		Switch:  func(e Switch) { got = append(got, e) },
		Wakeup:  func(e Wakeup) { got = append(got, e) },
		Migrate: func(e Migrate) { got = append(got, e) },
		Lost:    func(e Lost) { got = append(got, e) },
	}}
	for _, l := range lines {
		s.handle(&d, []byte(l))
	}
	d.flush()
	return got
}

func TestDispatchLost(t *testing.T) {
	const (
		sw0 = `  a-1 [000] d..2. 10.000001: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120`
		sw1 = `  c-3 [001] d..2. 10.000002: sched_switch: prev_comm=c prev_pid=3 prev_prio=120 prev_state=R ==> next_comm=d next_pid=4 next_prio=120`
		mg1 = `  d-4 [001] d..2. 10.000003: sched_migrate_task: comm=x pid=5 prio=120 orig_cpu=0 dest_cpu=1`
		wu0 = `  b-2 [000] d..2. 10.000004: sched_wakeup: comm=x pid=5 prio=120 target_cpu=001`
	)
	us := func(n int) time.Duration { return 10*time.Second + time.Duration(n)*time.Microsecond }
	s := &Session{}
	got := feed(s,
		`CPU:1 [LOST 7 EVENTS]`, // held until CPU 1's next event
		sw0,
		sw1,
		`CPU:0 [LOST EVENTS]`,
		`not a trace line`,
		mg1,
		wu0,
		`CPU:1 [LOST 2 EVENTS]`, // the trace ends first: the last event's time
	)
	require.Len(t, got, 7)
	assert.IsType(t, Switch{}, got[0])
	assert.Equal(t, Lost{Time: us(2), CPU: 1, Count: 7}, got[1])
	assert.IsType(t, Switch{}, got[2])
	assert.IsType(t, Migrate{}, got[3])
	assert.Equal(t, Lost{Time: us(4), CPU: 0, Count: 0}, got[4])
	assert.IsType(t, Wakeup{}, got[5])
	assert.Equal(t, Lost{Time: us(4), CPU: 1, Count: 2}, got[6])
	assert.Equal(t, Stats{Lost: 9, LostUncounted: 1}, s.Stats())
}

func TestDispatchMalformedAndNilHandlers(t *testing.T) {
	s := &Session{}
	d := dispatcher{} // no handlers: events are dropped, losses still counted
	for _, l := range []string{
		`  a-1 [000] d..2. 10.0: sched_switch: garbage`,
		`CPU:0 [LOST 3 EVENTS]`,
		`  a-1 [000] d..2. 10.0: sched_migrate_task: comm=x pid=5 prio=120 orig_cpu=0 dest_cpu=1`,
	} {
		s.handle(&d, []byte(l))
	}
	d.flush()
	assert.Equal(t, Stats{Lost: 3, Malformed: 1}, s.Stats())
}

// BenchmarkHandleSwitch is the reader's cost per line: parse and
// dispatch, allocating only the line's string.
func BenchmarkHandleSwitch(b *testing.B) {
	s := &Session{}
	n := 0
	d := dispatcher{h: Handlers{Switch: func(Switch) { n++ }}}
	line := []byte(benchSwitchLine)
	b.ReportAllocs()
	for b.Loop() {
		s.handle(&d, line)
	}
	if n == 0 || s.malformed.Load() != 0 {
		b.Fatal("line not handled as a switch")
	}
}
