package tracefs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLine(t *testing.T) {
	ts := 12345*time.Second + 678901*time.Microsecond
	tests := []struct {
		name string
		line string
		want Event
	}{
		{"switch basic",
			`          <idle>-0       [001] d..2. 12345.678901: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=foo next_pid=42 next_prio=120`,
			Switch{Time: ts, CPU: 1, PrevComm: "swapper/1", PrevPID: 0, PrevPrio: 120, PrevState: "R", NextComm: "foo", NextPID: 42, NextPrio: 120}},
		{"switch comms with spaces and keys",
			`  CPU 0/KVM-4242  [003] d..2. 12345.678901: sched_switch: prev_comm=CPU 0/KVM prev_pid=4242 prev_prio=120 prev_state=R+ ==> next_comm=a next_pid=1 b next_pid=77 next_prio=98`,
			Switch{Time: ts, CPU: 3, PrevComm: "CPU 0/KVM", PrevPID: 4242, PrevPrio: 120, PrevState: "R+", NextComm: "a next_pid=1 b", NextPID: 77, NextPrio: 98}},
		{"switch prev comm looks like keys",
			`x prev_pid=9-5 [000] .... 1.000001: sched_switch: prev_comm=x prev_pid=9 prev_pid=5 prev_prio=100 prev_state=S ==> next_comm= ==> next_comm= next_pid=6 next_prio=-1`,
			Switch{Time: time.Second + time.Microsecond, CPU: 0, PrevComm: "x prev_pid=9", PrevPID: 5, PrevPrio: 100, PrevState: "S", NextComm: " ==> next_comm=", NextPID: 6, NextPrio: -1}},
		{"switch empty comm, D|K state, no flags column, ns timestamp",
			`-17 [002] 5.123456789: sched_switch: prev_comm= prev_pid=17 prev_prio=120 prev_state=D|K ==> next_comm=[kworker] next_pid=18 next_prio=120`,
			Switch{Time: 5*time.Second + 123456789, CPU: 2, PrevComm: "", PrevPID: 17, PrevPrio: 120, PrevState: "D|K", NextComm: "[kworker]", NextPID: 18, NextPrio: 120}},
		{"header comm with brackets and dashes",
			`  a-[b] c-d-99   [011] dNh1. 7.5: sched_wakeup: comm=foo bar pid=42 prio=120 target_cpu=011`,
			Wakeup{Time: 7*time.Second + 500*time.Millisecond, CPU: 11, Comm: "foo bar", PID: 42, Prio: 120, TargetCPU: 11}},
		{"waking",
			`  sh-1 [000] d..3. 12345.678901: sched_waking: comm=pid=1 prio=2 pid=42 prio=120 target_cpu=000`,
			Wakeup{Time: ts, CPU: 0, Comm: "pid=1 prio=2", PID: 42, Prio: 120, TargetCPU: 0, Waking: true}},
		{"old wakeup with success",
			`  sh-1 [000] d..3 12345.678901: sched_wakeup: comm=foo pid=42 prio=120 success=1 target_cpu=002`,
			Wakeup{Time: ts, CPU: 0, Comm: "foo", PID: 42, Prio: 120, TargetCPU: 2}},
		{"migrate",
			`     kworker/0:1-12      [000] d..2. 12345.678901: sched_migrate_task: comm=CPU 0/KVM pid=4242 prio=120 orig_cpu=1 dest_cpu=0`,
			Migrate{Time: ts, CPU: 0, Comm: "CPU 0/KVM", PID: 4242, Prio: 120, OrigCPU: 1, DestCPU: 0}},
		{"migrate comm looks like keys",
			`  sh-1 [001] d..2. 12345.678901: sched_migrate_task: comm=a dest_cpu=7 pid=42 prio=-1 orig_cpu=0 dest_cpu=1`,
			Migrate{Time: ts, CPU: 1, Comm: "a dest_cpu=7", PID: 42, Prio: -1, OrigCPU: 0, DestCPU: 1}},
		{"migrate with running (Android kernels)",
			`  sh-1 [001] d..2. 12345.678901: sched_migrate_task: comm=foo pid=42 prio=120 orig_cpu=3 dest_cpu=1 running=1`,
			Migrate{Time: ts, CPU: 1, Comm: "foo", PID: 42, Prio: 120, OrigCPU: 3, DestCPU: 1}},
		{"lost", `CPU:5 [LOST 123 EVENTS]`, Lost{CPU: 5, Count: 123}},
		{"lost, count unknown", ` CPU:0 [LOST EVENTS] `, Lost{CPU: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLine(tt.line)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseLineRejects(t *testing.T) {
	for _, line := range []string{
		``,
		`  sh-1 [000] d..3. 1.0: sched_process_exit: comm=foo pid=42 prio=120`,
		`  sh-1 [000] d..3. 1.0: sched_switcher: prev_comm=a`,
		`# tracer: nop`,
		`CPU:x [LOST 1 EVENTS]`,
	} {
		_, err := ParseLine(line)
		assert.ErrorIs(t, err, ErrOtherEvent, "line %q", line)
	}
	for _, line := range []string{
		`  sh-1 [000] d..3. 1.0: sched_switch: prev_comm=a prev_pid=x prev_prio=1 prev_state=R ==> next_comm=b next_pid=2 next_prio=3`,
		`  sh-1 [000] d..3. 1.0: sched_switch: garbage`,
		`  sh-1 [x] d..3. 1.0: sched_wakeup: comm=a pid=1 prio=2 target_cpu=000`,
		`  sh-1 000 d..3. 1.0: sched_wakeup: comm=a pid=1 prio=2 target_cpu=000`,
		`  sh-1 [000] d..3. 1.0000000001: sched_wakeup: comm=a pid=1 prio=2 target_cpu=000`,
		`  sh-1 [000] d..3. -1.0: sched_wakeup: comm=a pid=1 prio=2 target_cpu=000`,
		`: sched_wakeup: comm=a pid=1 prio=2 target_cpu=000`,
		`  sh-1 [000] d..3. 1.0: sched_wakeup: comm=a pid=99999999999999999999 prio=2 target_cpu=000`,
		`  sh-1 [000] d..3. 1.0: sched_wakeup: comm=a pid=+1 prio=2 target_cpu=000`,
		`  sh-1 [000] d..3. 1.0: sched_switch: prev_comm=a prev_pid=1 prev_prio=1 prev_state= ==> next_comm=b next_pid=2 next_prio=3`,
		`  sh-1 [000] d..3. 1.0: sched_switch: prev_comm=a prev_pid=1 prev_prio=1 prev_state=R ==> next_comm=b next_pid=2`,
		`  sh-1 [000] d..3. 1.0: sched_migrate_task: comm=foo pid=42`,
		`  sh-1 [000] d..3. 1.0: sched_migrate_task: comm=foo pid=42 prio=120 orig_cpu=0 dest_cpu=1 running`,
		`  sh-1 [000] d..3. 1.0: sched_migrate_task: comm=foo pid=42 prio=120 orig_cpu=0 dest_cpu=x`,
	} {
		_, err := ParseLine(line)
		if assert.Error(t, err, "line %q", line) {
			assert.False(t, errors.Is(err, ErrOtherEvent), "line %q: %v", line, err)
		}
	}
}

func TestFilters(t *testing.T) {
	assert.Equal(t, "prev_pid == -1 || next_pid == -1", switchFilter(nil))
	assert.Equal(t, "prev_pid == 1 || next_pid == 1 || prev_pid == 22 || next_pid == 22", switchFilter([]int{1, 22}))
	assert.Equal(t, "pid == 1 || pid == 22", pidFilter([]int{1, 22}))
}

func FuzzParseLine(f *testing.F) {
	f.Add(`          <idle>-0       [001] d..2. 12345.678901: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=foo next_pid=42 next_prio=120`)
	f.Add(`  sh-1 [000] d..3. 12345.678901: sched_waking: comm=foo pid=42 prio=120 target_cpu=000`)
	f.Add(`  sh-1 [001] d..2. 12345.678901: sched_migrate_task: comm=foo pid=42 prio=120 orig_cpu=3 dest_cpu=1 running=1`)
	f.Add(`CPU:5 [LOST 123 EVENTS]`)
	f.Add(`CPU:5 [LOST EVENTS]`)
	f.Add(`]: sched_wakeup: [`)
	f.Add(`: sched_: sched_switch: ==> next_comm= ==> next_comm=`)
	f.Fuzz(func(t *testing.T, line string) {
		ev, err := ParseLine(line)
		if err == nil && ev == nil {
			t.Fatalf("nil event without error for %q", line)
		}
	})
}

// benchSwitchLine is a typical trace_pipe sched_switch line: with
// Options.AllSwitches most lines look like this.
const benchSwitchLine = `       CPU 1/KVM-4242    [001] d..2. 12345.678901: sched_switch: prev_comm=CPU 1/KVM prev_pid=4242 prev_prio=120 prev_state=R+ ==> next_comm=kworker/1:2 next_pid=123 next_prio=120`

func BenchmarkParseSwitch(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseLine(benchSwitchLine); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParseRoundTrip checks the claim the parser rests on: whatever two
// comms of at most 15 bytes (TASK_COMM_LEN-1) contain, including spaces
// and field keys, the kernel's line parses back to the event it printed.
func FuzzParseRoundTrip(f *testing.F) {
	f.Add("CPU 0/KVM", "kworker/0:1", int32(4242), int32(120), uint8(0))
	f.Add(" ==> next_comm=", " ==> next_comm=", int32(1), int32(-1), uint8(1))
	f.Add("x prev_pid=9", "a next_pid=1 b", int32(5), int32(0), uint8(2))
	f.Add("a dest_cpu=1 x", "pid=1 prio=2", int32(7), int32(99), uint8(3))
	f.Add("a success=1", " prio=1 ", int32(2147483647), int32(-2147483648), uint8(4))
	states := []string{"R", "R+", "S", "D", "D|K", "I"}
	f.Fuzz(func(t *testing.T, c1, c2 string, pid, prio int32, sel uint8) {
		if len(c1) > 15 || len(c2) > 15 || strings.ContainsAny(c1+c2, "\n\r\x00") {
			t.Skip("not a comm")
		}
		const hdr = `     CPU 1/KVM-4242    [003] d..2. 12345.678901: `
		ts := 12345*time.Second + 678901*time.Microsecond
		var line string
		var want Event
		switch sel % 4 {
		case 0:
			st := states[int(sel)%len(states)]
			line = fmt.Sprintf("%ssched_switch: prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s ==> next_comm=%s next_pid=%d next_prio=%d",
				hdr, c1, pid, prio, st, c2, prio, pid)
			want = Switch{Time: ts, CPU: 3, PrevComm: c1, PrevPID: int(pid), PrevPrio: int(prio), PrevState: st,
				NextComm: c2, NextPID: int(prio), NextPrio: int(pid)}
		case 1:
			line = fmt.Sprintf("%ssched_wakeup: comm=%s pid=%d prio=%d target_cpu=%03d", hdr, c1, pid, prio, sel)
			want = Wakeup{Time: ts, CPU: 3, Comm: c1, PID: int(pid), Prio: int(prio), TargetCPU: int(sel)}
		case 2:
			line = fmt.Sprintf("%ssched_waking: comm=%s pid=%d prio=%d success=1 target_cpu=%03d", hdr, c2, pid, prio, sel)
			want = Wakeup{Time: ts, CPU: 3, Comm: c2, PID: int(pid), Prio: int(prio), TargetCPU: int(sel), Waking: true}
		case 3:
			line = fmt.Sprintf("%ssched_migrate_task: comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d running=%d", hdr, c1, pid, prio, sel, prio, sel&1)
			want = Migrate{Time: ts, CPU: 3, Comm: c1, PID: int(pid), Prio: int(prio), OrigCPU: int(sel), DestCPU: int(prio)}
		}
		got, err := ParseLine(line)
		require.NoError(t, err, "line %q", line)
		require.Equal(t, want, got, "line %q", line)
	})
}
