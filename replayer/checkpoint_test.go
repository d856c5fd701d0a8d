package replayer_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
)

// Every workload replays from each of its checkpoints to the recorded
// end: the same final RAM hash and console hash as a replay from boot,
// the console output from that point on, and the same tape events; and a
// replay from boot passes every checkpoint's check.
func TestReplayFromEveryCheckpoint(t *testing.T) {
	img := kitImage(t)
	args := map[string]string{
		"cpu": "digits=12000", "clock": "reads=2000000", "syn_cont": "iters=300 work=8000",
		"profile": "rounds=200", "periodic": "count=20", "bench": "syscall n=2000",
	}
	for _, w := range guest.Workloads() {
		if _, ok := args[w.Name]; !ok {
			continue // udp needs senders, disk a base image, crash ends in a fault: below
		}
		t.Run(w.Name, func(t *testing.T) {
			rec := record(t, img, w.Name+" "+args[w.Name], recorder.Auto)
			require.NoError(t, rec.err)
			ck := filepath.Join(t.TempDir(), "run.ckpt")
			var full bytes.Buffer
			whole, err := replayer.Replay(context.Background(), replayer.Options{Tape: rec.path, Console: &full,
				Checkpoints: ck, CheckpointEvery: 20 * time.Millisecond})
			require.NoError(t, err)
			require.Equal(t, rec.console, full.String())
			require.NotEmpty(t, whole.Checkpoints, "no checkpoint taken")
			t.Logf("%d checkpoints; the first %d bytes, the others %d on average", len(whole.Checkpoints), whole.Checkpoints[0].Bytes, avgBytes(whole.Checkpoints[1:]))

			for i := range whole.Checkpoints {
				var out bytes.Buffer
				res, err := replayer.Replay(context.Background(), replayer.Options{Tape: rec.path, Console: &out, Checkpoints: ck, Start: i + 1})
				require.NoError(t, err, "from checkpoint %d", i+1)
				require.Equal(t, whole.End.RAMHash, res.End.RAMHash, "from checkpoint %d: RAM", i+1)
				require.Equal(t, whole.End.ConsoleHash, res.End.ConsoleHash, "from checkpoint %d: console", i+1)
				require.True(t, strings.HasSuffix(full.String(), out.String()), "from checkpoint %d: the output from there on", i+1)
				require.Equal(t, whole.Events, res.Events, "from checkpoint %d: tape events", i+1)
			}
			// From boot, with the file: each checkpoint is checked on the way.
			_, err = replayer.Replay(context.Background(), replayer.Options{Tape: rec.path, Console: &bytes.Buffer{}, Checkpoints: ck})
			require.NoError(t, err)
		})
	}
}

func avgBytes(s []checkpoint.Summary) int64 {
	if len(s) == 0 {
		return 0
	}
	var n int64
	for _, c := range s {
		n += c.Bytes
	}
	return n / int64(len(s))
}
