package eventdb

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChooseRun(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()

	_, err = db.ChooseRun(0, nil)
	require.ErrorIs(t, err, ErrNoSuitableRun)
	require.ErrorContains(t, err, "has no runs")

	// Runs 1 to 5: with and without probes, finished, and cut short (an
	// ingest closed without Finish, as a stopped replay leaves it).
	newRun := func(probes []Probe, finish bool) {
		_, in, err := db.NewRun("t.tape", probes, "")
		require.NoError(t, err)
		require.NoError(t, in.Add(&Event{Kind: KindSample, Thread: 1, Addr: 0x401000}))
		if finish {
			require.NoError(t, in.Finish())
		} else {
			require.NoError(t, in.Close())
		}
	}
	newRun(testProbes, true)
	newRun(nil, true)
	newRun(testProbes, false)
	newRun(nil, true)
	newRun(nil, false)
	probed := func(r *Run) error {
		if len(r.Probes) == 0 {
			return errors.New("no probes")
		}
		return nil
	}

	// By default, the latest complete run that suits, and the newer
	// incomplete runs passed over.
	c, err := db.ChooseRun(0, probed)
	require.NoError(t, err)
	require.Equal(t, uint32(1), c.Run.ID)
	require.True(t, c.Run.Complete)
	require.Equal(t, []uint32{3, 5}, c.Skipped)
	c, err = db.ChooseRun(0, nil)
	require.NoError(t, err)
	require.Equal(t, uint32(4), c.Run.ID)
	require.Equal(t, []uint32{5}, c.Skipped)

	// A run named is read as it is, complete or not, if it suits.
	c, err = db.ChooseRun(3, probed)
	require.NoError(t, err)
	require.Equal(t, uint32(3), c.Run.ID)
	require.False(t, c.Run.Complete)
	require.Equal(t, uint64(1), c.Run.Events)
	require.Nil(t, c.Skipped)
	_, err = db.ChooseRun(2, probed)
	require.EqualError(t, err, "run 2: no probes")
	_, err = db.ChooseRun(9, probed)
	require.ErrorIs(t, err, ErrNoRun)

	// When none suits, the error says why for each run.
	_, err = db.ChooseRun(0, func(*Run) error { return errors.New("no samples") })
	require.ErrorIs(t, err, ErrNoSuitableRun)
	require.EqualError(t, err, "eventdb: no suitable run in "+dir+
		": run 5 is incomplete; run 4: no samples; run 3 is incomplete; runs 1–2: no samples")
	newRun(nil, false)
	_, err = db.ChooseRun(0, func(*Run) error { return errors.New("no") })
	require.ErrorContains(t, err, "runs 5–6 are incomplete; run 4: no; run 3 is incomplete; runs 1–2: no")
}
