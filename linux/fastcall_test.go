package linux_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/vmm"
)

// Programs whose calls are exception-less (Program.FastCalls) print what
// the host prints for them, live and recorded, and every recording
// replays to its console, RAM and status: calls answered beside the
// vCPU, calls that block on a pipe or a child and are finished by an
// exit, threads switched and signals delivered after them, timers firing
// while the program spins in the stub — a replay serving each call the
// way it happens to, which need not be its recording's. Every call goes
// through the stub; the busybox loop's thousands must have been answered
// without an exit too, live, recorded and replayed (the small programs'
// few may all be late on a busy host, the companion preempted).
func TestFastCalls(t *testing.T) {
	kvmtest.RequireTools(t, "busybox")
	dir := t.TempDir()
	script := filepath.Join(dir, "loop.sh")
	f := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(script, []byte(fmt.Sprintf(
		"i=0; while [ $i -lt 300 ]; do echo x$i > %s; read l < %s; i=$((i+1)); done; echo $l; echo a b | busybox wc -w\n", f, f)), 0o644))
	bb, err := exec.LookPath("busybox")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		bin  string
		argv []string
		want string // "": the host's output
	}{
		{"busybox-loop", bb, []string{"sh", script}, "x299\n2\n"}, // first: it requires answers
		{"threads", build(t, "musl-gcc", "threads.c", "-static", "-O2", "-pthread"), []string{"threads"}, "total=400000\n"},
		{"signals", build(t, "musl-gcc", "signals.c", "-static", "-O1"), []string{"signals"}, ""},
		{"poll", build(t, "musl-gcc", "poll.c", "-static", "-O1"), []string{"poll"}, ""},
		{"alarm", build(t, "musl-gcc", "alarm.c", "-static", "-O1"), []string{"alarm"}, "alarms 1\nalarm first 0\nalarm left 5\n"},
		{"wait", build(t, "musl-gcc", "wait.c", "-static", "-O1"), []string{"wait"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = hostOutput(t, tc.bin)
			}
			answered := tc.name == "busybox-loop"
			k, res, out, err := runLiveSetUp(t, vmm.DefaultTimerHz, tc.bin, tc.argv, nil, func(p *linux.Program) { p.FastCalls = true })
			require.NoError(t, err, out)
			require.Equal(t, uint32(0), res.Status, out)
			require.Equal(t, want, out)
			s := k.Stats()
			t.Logf("live: %d answered, %d finished by an exit, %d refused, %d late", s.FastAnswered, s.FastFinished, s.FastRefused, s.FastLate)
			require.NotZero(t, s.FastAnswered+s.FastFinished+s.FastRefused+s.FastLate+s.FastAtCPL0, "no call went through the exception-less stub")
			if s.FastAtCPL0 > 0 {
				// SYSCALL enters CPL0 (a VMX or SVM host, the nested CI
				// VMs'): every call exits at once, as without fast calls
				// (but the start, which the program's first entry makes
				// at the stub in user mode, and which is never served
				// beside).
				require.Zero(t, s.FastAnswered+s.FastFinished, "calls served beside at CPL0")
				answered = false
			}
			if answered {
				require.NotZero(t, s.FastAnswered, "no call was answered without an exit")
			}

			p := program(t, tc.bin, tc.argv...)
			p.FastCalls = true
			path, rec, console := recordProgram(t, p, time.Millisecond)
			require.Equal(t, want, console)
			t.Logf("recorded: %d exits served beside", rec.Stats.ExitsBeside)
			for i, rep := range replaysMatch(t, path, rec, console, 3) {
				t.Logf("replay %d: %d exits served beside", i, rep.Stats.ExitsBeside)
				if answered {
					require.NotZero(t, rec.Stats.ExitsBeside, "the recording served no exit beside")
					require.NotZero(t, rep.Stats.ExitsBeside, "replay %d served no exit beside", i)
				}
			}
		})
	}
}
