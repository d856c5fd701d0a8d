package replayer_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/cprog"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
)

// A recording whose system calls were exception-less (linux.Program.
// FastCalls) — threads making pread, pwrite, lseek and getpid under a
// mutex — with checkpoints taken as it went, replays with probes on the
// mutex — int3s, which leave calls served beside alone — to the
// acquisitions the program counted and the recorded RAM, the same hits
// twice; and from its checkpoints, each to the recorded end.
func TestFastCallsWithProbesAndCheckpoints(t *testing.T) {
	bin := cprog.Build(t, "musl-gcc", "calllocks", "-static", "-O1", "-g")
	ck := filepath.Join(t.TempDir(), "prog.ckpt")
	path, rec, console := recordLinuxSetUp(t, recorder.Options{CheckpointEvery: 50 * time.Millisecond, Checkpoints: ck},
		nil, func(p *linux.Program) { p.FastCalls = true }, bin, "calllocks", "4", "2000")
	want := cprog.Truth(console)
	require.NotZero(t, want["counter_lock"], console)
	t.Logf("recorded: %d exits served beside, %d checkpoints", rec.Stats.ExitsBeside, len(rec.Checkpoints))
	require.NotZero(t, rec.Stats.ExitsBeside, "the recording served no call beside")

	specs, err := probes.ParseSpecs([]string{"lock=pthread_mutex_lock m=arg0"})
	require.NoError(t, err)
	var runs [2]map[uint64]int
	for i := range runs {
		set, err := probes.NewSet(specs)
		require.NoError(t, err)
		entries := map[uint64]int{}
		var out bytes.Buffer
		res, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &out, Set: set,
			OnHit: func(h replayer.Hit) error { entries[h.Args[0].Value]++; return nil }})
		require.NoError(t, err)
		require.Equal(t, console, out.String())
		require.Equal(t, rec.End.RAMHash, res.End.RAMHash, "the probed replay's RAM differs")
		t.Logf("probed replay %d: %d exits served beside", i, res.Stats.ExitsBeside)
		require.Len(t, entries, 1, "one mutex")
		for _, n := range entries {
			require.Equal(t, want["counter_lock"], n, "acquisitions of counter_lock")
		}
		runs[i] = entries
	}
	require.Equal(t, runs[0], runs[1], "the probed replays' hits")

	n := len(rec.Checkpoints)
	require.GreaterOrEqual(t, n, 3, "checkpoints taken while recording")
	replaysFromEach(t, path, ck, rec, console, 1, n/2, n-1)
}
