package linux_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/vmm"
)

// Programs whose calls are exception-less (EnableFastCalls) print what
// the host prints for them: calls answered beside the vCPU, calls that
// block on a pipe or a child and are finished by an exit, threads
// switched and signals delivered after them, timers firing while the
// program spins in the stub. Every call goes through the stub; the busybox
// loop's thousands must have been answered without an exit too (the small
// programs' few may all be late on a busy host, the companion preempted).
func TestFastCalls(t *testing.T) {
	kvmtest.RequireTools(t, "busybox")
	dir := t.TempDir()
	loop := func(f string) string {
		return fmt.Sprintf("i=0; while [ $i -lt 300 ]; do echo x$i > %s; read l < %s; i=$((i+1)); done; echo $l; echo a b | busybox wc -w\n", f, f)
	}
	script := filepath.Join(dir, "loop.sh")
	require.NoError(t, os.WriteFile(script, []byte(loop(filepath.Join(dir, "f"))), 0o644))
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
				host := exec.Command(tc.bin)
				host.Dir = t.TempDir()
				out, err := host.Output()
				require.NoError(t, err)
				want = string(out)
			}
			k, res, out, err := runLiveSetUp(t, vmm.DefaultTimerHz, tc.bin, tc.argv, nil, (*linux.Kernel).EnableFastCalls)
			require.NoError(t, err, out)
			require.Equal(t, uint32(0), res.Status, out)
			require.Equal(t, want, out)
			s := k.Stats()
			t.Logf("exception-less: %d answered, %d finished by an exit, %d refused, %d late", s.FastAnswered, s.FastFinished, s.FastRefused, s.FastLate)
			require.NotZero(t, s.FastAnswered+s.FastFinished+s.FastRefused+s.FastLate, "no call went through the exception-less stub")
			if tc.name == "busybox-loop" {
				require.NotZero(t, s.FastAnswered, "no call was answered without an exit")
			}
		})
	}
}
