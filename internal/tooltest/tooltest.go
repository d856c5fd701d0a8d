// Package tooltest records a bundled workload and replays it into a fresh
// event DB, for the tests of the diagnosis tools: real guest, real tape,
// real Pebble DB.
package tooltest

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
)

// Replayed is a workload recorded and replayed into a DB.
type Replayed struct {
	DB     *eventdb.DB
	Run    *eventdb.Run
	Truths []guest.Truth // the guest's ground truth lines
	Tape   string
}

// Options say what the replay probes.
type Options struct {
	Probes      []string // probe specs (guest.LockProbes for the lock tools)
	SampleEvery uint64
}

// Replay records cmdline (workload and arguments) on the guest kit at the
// default timer rate, then replays it into a new DB in a temporary
// directory, closed when the test ends.
func Replay(t testing.TB, cmdline string, o Options) *Replayed {
	t.Helper()
	rec := Record(t, t.TempDir(), "run", cmdline)
	return rec.Replay(t, o)
}

// Recorded is a workload recorded on the guest kit.
type Recorded struct {
	Tape   string
	Image  *elffile.Image
	Truths []guest.Truth
	Result *recorder.Result
}

// Record records cmdline on the guest kit to dir/name.tape. It may run
// in several goroutines at once (VMs recorded side by side).
func Record(t testing.TB, dir, name, cmdline string) *Recorded {
	t.Helper()
	img := Kit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	path := filepath.Join(dir, name+".tape")
	var out bytes.Buffer
	res, err := recorder.Record(ctx, recorder.Options{Image: img, Cmdline: cmdline, Output: path, Console: &out, PositionSource: recorder.Auto})
	require.NoError(t, err, "recording %q: %s", cmdline, out.String())
	require.NotNil(t, res)
	return &Recorded{Tape: path, Image: img, Truths: guest.ParseTruth(out.String()), Result: res}
}

// Kit builds (or finds cached) the guest kit and opens its image.
func Kit(t testing.TB) *elffile.Image {
	t.Helper()
	kvmtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k, err := guest.Build(ctx)
	require.NoError(t, err)
	img, err := elffile.OpenImage(k.Image())
	require.NoError(t, err)
	return img
}

// Replay replays the recording into a new DB beside its tape, closed when
// the test ends.
func (rec *Recorded) Replay(t testing.TB, o Options) *Replayed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ro := replayer.Options{Tape: rec.Tape, Console: &bytes.Buffer{}, SampleEvery: o.SampleEvery}
	if len(o.Probes) > 0 {
		specs, err := probes.ParseSpecs(o.Probes)
		require.NoError(t, err)
		ro.Plan, err = probes.Resolve(specs, rec.Image)
		require.NoError(t, err)
	}
	db, err := eventdb.Open(strings.TrimSuffix(rec.Tape, ".tape")+".db", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, run, err := replayer.ToDB(ctx, ro, db)
	require.NoError(t, err)
	require.True(t, run.Complete)
	return &Replayed{DB: db, Run: run, Truths: rec.Truths, Tape: rec.Tape}
}
