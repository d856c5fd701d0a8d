package replayer_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/vmm"
)

// Deterministic sampling gives the same samples in every replay — and
// still a faithful replay — and the samples land in the sampled code.
func TestDeterministicSamplingRepeats(t *testing.T) {
	img := kitImage(t)
	rec := record(t, img, "profile rounds=100", recorder.Auto)
	require.NoError(t, rec.err)
	run := func() []replayer.Sample {
		var samples []replayer.Sample
		var out bytes.Buffer
		res, err := replayer.Replay(context.Background(), replayer.Options{
			Tape: rec.path, Console: &out, SampleEvery: 50_000,
			OnSample: func(s *replayer.Sample, _ vmm.GuestMemory) error {
				samples = append(samples, *s)
				return nil
			},
		})
		require.NoError(t, err, out.String())
		require.Equal(t, rec.res.End.RAMHash, res.End.RAMHash)
		require.Equal(t, rec.console, out.String())
		return samples
	}
	a, b := run(), run()
	require.Greater(t, len(a), 100, "too few samples to mean anything")
	require.Equal(t, a, b, "two replays sampled differently")

	inProfile := 0
	for _, s := range a {
		require.EqualValues(t, 0, s.Pos.Branch%50_000)
		if sym, _, ok := img.Resolve(s.RIP); ok && len(sym.Name) > 5 && sym.Name[:5] == "prof_" {
			inProfile++
			require.Positive(t, s.Cost, "no cost estimated at %#x", s.RIP)
		}
		require.NotEmpty(t, s.Stack, "no frame-pointer stack at %#x", s.RIP)
	}
	require.Greater(t, inProfile, len(a)*8/10, "most samples of the profile workload should be in its prof_ functions")
}

// Timed sampling finds the guest wherever it is and leaves the replay
// faithful.
func TestTimedSampling(t *testing.T) {
	img := kitImage(t)
	rec := record(t, img, "cpu digits=20000", recorder.Auto)
	require.NoError(t, rec.err)
	n := 0
	var out bytes.Buffer
	res, err := replayer.Replay(context.Background(), replayer.Options{
		Tape: rec.path, Console: &out, SamplePeriod: 2 * time.Millisecond,
		OnSample: func(s *replayer.Sample, _ vmm.GuestMemory) error {
			require.NotZero(t, s.RIP)
			require.Zero(t, s.Cost, "a timed sample stands for its period")
			n++
			return nil
		},
	})
	require.NoError(t, err, out.String())
	require.Equal(t, rec.res.End.RAMHash, res.End.RAMHash)
	// Ticks that fall due while the vCPU thread waits for a host CPU
	// coalesce, so a loaded host sees fewer samples than elapsed/period,
	// never more.
	require.GreaterOrEqual(t, n, 5, "a ~300 ms replay sampled every 2 ms")
	require.LessOrEqual(t, n, int(res.Elapsed/(2*time.Millisecond))+1, "at most one sample per period")
}
