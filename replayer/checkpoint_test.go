package replayer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

// Every workload replays from its checkpoints — the first, the middle
// one and the last — to the recorded end: the same final RAM hash and
// console hash as a replay from boot, the console output from that point
// on, and the same tape events; and a replay from boot passes every
// checkpoint's check. (The udp workload: TestNetworkRecordReplay.)
func TestReplayFromEveryCheckpoint(t *testing.T) {
	img := kitImage(t)
	args := map[string]string{
		"cpu": "digits=12000", "clock": "reads=2000000", "syn_cont": "iters=300 work=8000",
		"profile": "rounds=200", "periodic": "count=20", "bench": "syscall n=2000", "disk": "chunk=1",
		"crash": "kind=null",
	}
	for _, w := range guest.Workloads() {
		if _, ok := args[w.Name]; !ok {
			continue // udp needs senders
		}
		t.Run(w.Name, func(t *testing.T) {
			var base string
			if w.Name == "disk" {
				base, _, _ = diskImage(t, 1)
			}
			rec := recordWithDisk(t, img, w.Name+" "+args[w.Name], recorder.Auto, base)
			if w.Name != "crash" {
				require.NoError(t, rec.err)
			}
			replaysFromCheckpoints(t, rec.path, rec.console)
		})
	}
}

// replaysFromCheckpoints replays the tape at path writing about a dozen
// checkpoints (every 20 ms of record time, or more sparsely if a loaded
// host stretched the recording: their count, not the host's speed, is
// what the test needs), then from the first, middle and last of them,
// and checks each against the replay from boot; and that a replay from
// boot passes every one.
func replaysFromCheckpoints(t *testing.T, path, console string) {
	t.Helper()
	sum, err := tape.Summarize(path)
	require.NoError(t, err)
	ck := filepath.Join(t.TempDir(), "run.ckpt")
	var full bytes.Buffer
	whole, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &full,
		Checkpoints: ck, CheckpointEvery: max(20*time.Millisecond, sum.Duration/12)})
	require.NoError(t, ignoreFault(err))
	require.Equal(t, console, full.String())
	require.NotEmpty(t, whole.Checkpoints, "no checkpoint taken")
	t.Logf("%d checkpoints; the first %d bytes, the others %d on average", len(whole.Checkpoints), whole.Checkpoints[0].Bytes, avgBytes(whole.Checkpoints[1:]))

	n := len(whole.Checkpoints)
	for _, i := range slices.Compact([]int{0, n / 2, n - 1}) {
		var out bytes.Buffer
		res, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &out, Checkpoints: ck, Start: i + 1})
		require.NoError(t, ignoreFault(err), "from checkpoint %d", i+1)
		require.Equal(t, whole.End, res.End, "from checkpoint %d: the end (RAM, console, fault)", i+1)
		require.True(t, strings.HasSuffix(full.String(), out.String()), "from checkpoint %d: the output from there on", i+1)
		require.Equal(t, whole.Events, res.Events, "from checkpoint %d: tape events", i+1)
	}
	// From boot, with the file: each checkpoint is checked on the way.
	_, err = replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &bytes.Buffer{}, Checkpoints: ck})
	require.NoError(t, ignoreFault(err))
}

// ignoreFault is err unless it is the guest fault a recording ended in,
// which its replays reproduce.
func ignoreFault(err error) error {
	var gf *vmm.GuestFault
	if errors.As(err, &gf) {
		return nil
	}
	return err
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

// A replay from a checkpoint with lock probes and deterministic sampling,
// into an event DB, stores exactly the events a replay from boot stores
// from that checkpoint on: kind, thread, position, record time, probe,
// address, arguments, stack.
func TestReplayFromCheckpointStoresTheSameEvents(t *testing.T) {
	img, rec, ck, whole, plan := checkpointedLocks(t)
	events := func(start int) []string {
		db, err := eventdb.Open(filepath.Join(t.TempDir(), "db"), nil)
		require.NoError(t, err)
		defer db.Close()
		_, run, err := replayer.ToDB(context.Background(), replayer.Options{Tape: rec.path, Console: &bytes.Buffer{}, Image: img,
			Plan: plan, SampleEvery: 50_000, Checkpoints: ck, Start: start}, db)
		require.NoError(t, err)
		var out []string
		it := db.Query(eventdb.Query{Run: run.ID, Kinds: []eventdb.Kind{eventdb.KindProbeEntry, eventdb.KindProbeReturn, eventdb.KindSample}})
		for it.Next() {
			e := it.Event()
			out = append(out, fmt.Sprintf("%v %d %v %v %d %#x %x %x", e.Kind, e.Thread, e.Pos, e.Time, e.Probe, e.Addr, e.Args, e.Stack))
		}
		require.NoError(t, it.Close())
		return out
	}
	all := events(0)
	require.NotEmpty(t, all)
	for _, start := range slices.Compact([]int{2, len(whole.Checkpoints) / 2}) {
		at := whole.Checkpoints[start-1].Pos
		var want []string
		for _, e := range all {
			var kind string
			var thread uint32
			var pos vmm.Position
			_, err := fmt.Sscanf(e, "%s %d %d:%d", &kind, &thread, &pos.Exit, &pos.Branch)
			require.NoError(t, err, e)
			if pos.Exit > at.Exit || pos.Exit == at.Exit && pos.Branch >= at.Branch {
				want = append(want, e)
			}
		}
		require.NotEmpty(t, want, "checkpoint %d at %v; events from %s to %s", start, at, all[0], all[len(all)-1])
		require.Equal(t, want, events(start), "from checkpoint %d", start)
	}
}

// A replay split at its checkpoints and run on two machines at once
// stores the run a replay from boot stores: every probe hit, sample and
// trace record in the same arrival order, with the same positions, record
// times and arguments; the host view's records all there too (their
// arrival among the others follows the tape's reading, not the guest).
func TestParallelReplayStoresTheSequentialRun(t *testing.T) {
	img, rec, ck, _, plan := checkpointedLocks(t)
	n, err := replayer.Segments(replayer.Options{Tape: rec.path, Checkpoints: ck})
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 3)
	o := replayer.Options{Tape: rec.path, Image: img, Plan: plan, SampleEvery: 50_000, Checkpoints: ck}
	seq, par := storedRun(t, o, false), storedRun(t, o, true)
	requireSameRun(t, seq, par)
}

// A sample due at a checkpoint's own position — a branch-counter stop,
// where a tape interrupt applies — is taken once in a split replay too:
// the segment that ends there stops before sampling, and the one that
// starts there samples at its first stop. The sample period is that
// checkpoint's branch count, so the coincidence is certain.
func TestParallelReplaySamplesAtItsCheckpoints(t *testing.T) {
	img, rec, ck, whole, plan := checkpointedLocks(t)
	k := slices.IndexFunc(whole.Checkpoints, func(c checkpoint.Summary) bool { return c.Stop == vmm.StopBranch && c.Pos.Branch > 0 })
	require.GreaterOrEqual(t, k, 0, "no checkpoint at a branch-counter stop: %v", whole.Checkpoints)
	at := whole.Checkpoints[k].Pos
	o := replayer.Options{Tape: rec.path, Image: img, Plan: plan, SampleEvery: at.Branch, Checkpoints: ck}
	seq := storedRun(t, o, false)
	sampledThere := func(e string) bool {
		f := strings.Fields(e) // kind thread exit:branch ...
		return f[0] == eventdb.KindSample.String() && f[2] == fmt.Sprintf("%d:%d", at.Exit, at.Branch)
	}
	require.True(t, slices.ContainsFunc(seq.guest, sampledThere), "the replay from boot samples at checkpoint %d's position %v", k+1, at)
	requireSameRun(t, seq, storedRun(t, o, true))
}

// storedEvents is what a replay stored in its event DB: the guest's
// events in arrival order, the host view's sorted (their arrival among
// the others follows the tape's reading), and the console output.
type storedEvents struct {
	guest, host []string
	console     string
}

// storedRun replays o into a new event DB, from boot or split into its
// segments on two machines, and reads back the run.
func storedRun(t *testing.T, o replayer.Options, parallel bool) storedEvents {
	t.Helper()
	db, err := eventdb.Open(filepath.Join(t.TempDir(), "db"), nil)
	require.NoError(t, err)
	defer db.Close()
	var out bytes.Buffer
	o.Console = &out
	var run *eventdb.Run
	if parallel {
		_, run, err = replayer.ParallelToDB(context.Background(), o, db, 2)
	} else {
		_, run, err = replayer.ToDB(context.Background(), o, db)
	}
	require.NoError(t, err)
	require.True(t, run.Complete)
	var st storedEvents
	it := db.Merged(eventdb.Query{Run: run.ID})
	for it.Next() {
		e := it.Event()
		s := fmt.Sprintf("%v %d %v %v %d %#x %x %x", e.Kind, e.Thread, e.Pos, e.Time, e.Probe, e.Addr, e.Args, e.Stack)
		switch e.Kind {
		case eventdb.KindVCPURun, eventdb.KindVCPUIdle, eventdb.KindHypervisor, eventdb.KindHostSwitch, eventdb.KindHostWakeup, eventdb.KindHostMigrate:
			st.host = append(st.host, s)
		default:
			st.guest = append(st.guest, s)
		}
	}
	require.NoError(t, it.Close())
	slices.Sort(st.host)
	st.console = out.String()
	return st
}

// requireSameRun checks that a split replay stored the run a replay from
// boot stored.
func requireSameRun(t *testing.T, seq, par storedEvents) {
	t.Helper()
	require.NotEmpty(t, seq.guest)
	require.Equal(t, seq.guest, par.guest, "the guest's events, in arrival order")
	require.NotEmpty(t, seq.host)
	require.Equal(t, seq.host, par.host, "the host view's")
	require.True(t, strings.HasSuffix(seq.console, par.console), "the last segment prints the end of the output")
}

// checkpointedLocks records syn_cont, replays it writing a checkpoint
// every 15 ms, and resolves the kit's lock probes: what the tests of
// replays from checkpoints with probes start from.
func checkpointedLocks(t *testing.T) (*elffile.Image, recording, string, *replayer.Result, *probes.Plan) {
	t.Helper()
	img := kitImage(t)
	rec := record(t, img, "syn_cont iters=300 work=8000", recorder.Auto)
	require.NoError(t, rec.err)
	ck := filepath.Join(t.TempDir(), "run.ckpt")
	whole, err := replayer.Replay(context.Background(), replayer.Options{Tape: rec.path, Console: &bytes.Buffer{},
		Checkpoints: ck, CheckpointEvery: 15 * time.Millisecond})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(whole.Checkpoints), 3)
	specs, err := probes.ParseSpecs(guest.LockProbes)
	require.NoError(t, err)
	plan, err := probes.Resolve(specs, img)
	require.NoError(t, err)
	return img, rec, ck, whole, plan
}

// A recording takes checkpoints too: the state its replay has at the same
// stops. A replay from boot checks every one of them (RAM and registers),
// one without them ends the same, and a replay from one reaches the
// recorded end.
func TestRecordingCheckpoints(t *testing.T) {
	img := kitImage(t)
	for _, cmd := range []string{"syn_cont iters=300 work=8000", "periodic count=20", "disk chunk=1"} {
		t.Run(strings.Fields(cmd)[0], func(t *testing.T) {
			dir := t.TempDir()
			path, ck := filepath.Join(dir, "run.tape"), filepath.Join(dir, "run.ckpt")
			var base string
			if strings.HasPrefix(cmd, "disk") { // checkpoints wait for the disk to be idle
				base, _, _ = diskImage(t, 1)
			}
			var console bytes.Buffer
			rec, err := recorder.Record(context.Background(), recorder.Options{Image: img, Cmdline: cmd, Output: path, Console: &console,
				TimerHz: 250, CheckpointEvery: 10 * time.Millisecond, Checkpoints: ck, DiskBase: base})
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(rec.Checkpoints), 2, "checkpoints taken while recording")

			var out bytes.Buffer
			whole, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &out, Checkpoints: ck})
			require.NoError(t, err, "a replay from boot checks the recording's checkpoints")
			require.Equal(t, console.String(), out.String())
			// Taking a checkpoint reads the vCPU (and settles its last
			// exit first): a replay that takes and checks none runs as
			// the recording did all the same.
			var bare bytes.Buffer
			plain, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &bare})
			require.NoError(t, err, "a replay from boot without the checkpoint file")
			require.Equal(t, whole.End.RAMHash, plain.End.RAMHash)
			require.Equal(t, console.String(), bare.String())
			n := len(rec.Checkpoints)
			for _, i := range slices.Compact([]int{1, n / 2, n}) {
				var part bytes.Buffer
				res, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &part, Checkpoints: ck, Start: i})
				require.NoError(t, err, "from checkpoint %d", i)
				require.Equal(t, whole.End.RAMHash, res.End.RAMHash, "from checkpoint %d", i)
				require.Equal(t, whole.End.ConsoleHash, res.End.ConsoleHash, "from checkpoint %d", i)
				require.True(t, strings.HasSuffix(out.String(), part.String()), "from checkpoint %d", i)
			}
		})
	}
}

// TestReplayFromARecordersStaleTarget replays from a checkpoint the
// recorder took while the branch-counter target in guest RAM was one the
// guest had already passed (met, or never set: 0): the recorder keeps
// what RAM holds, and a replay resumed there must not take that target
// for one its guest went past without stopping ("expected a stop at
// branch 0"). Such a checkpoint comes by timing (about 3 recordings in
// 16 hold one), so recordings are made until one holds it: at that rate
// 48 attempts all miss once in some 20 000 runs (12 did once in 12: a
// flake the full suite hit).
func TestReplayFromARecordersStaleTarget(t *testing.T) {
	img := kitImage(t)
	const attempts = 48
	for attempt := 1; attempt <= attempts; attempt++ {
		dir := t.TempDir()
		path, ck := filepath.Join(dir, "run.tape"), filepath.Join(dir, "run.ckpt")
		var out bytes.Buffer
		var err error
		noisy(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_, err = recorder.Record(ctx, recorder.Options{Image: img, Cmdline: "cpu digits=3000", Output: path, Console: &out,
				PositionSource: recorder.Auto, CheckpointEvery: 10 * time.Millisecond, Checkpoints: ck})
		})
		require.NoError(t, err)
		r, err := tape.Open(path)
		require.NoError(t, err)
		h := r.Header()
		require.NoError(t, r.Close())
		f, err := checkpoint.Open(ck, checkpoint.RecordingOf(h))
		require.NoError(t, err)
		stale := -1
		for i := range f.Checkpoints() {
			cp, err := f.Meta(i)
			require.NoError(t, err)
			if cp.Engine.Target < cp.Pos.Branch {
				stale = i
				break
			}
		}
		require.NoError(t, f.Close())
		if stale < 0 {
			continue
		}
		t.Logf("attempt %d: checkpoint %d holds a target behind its count", attempt, stale+1)
		var rest bytes.Buffer
		_, err = replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &rest, Checkpoints: ck, Start: stale + 1})
		require.NoError(t, err)
		require.True(t, strings.HasSuffix(out.String(), rest.String()), "the output from checkpoint %d on", stale+1)
		return
	}
	t.Fatalf("no recording took a checkpoint with a target behind its count in %d attempts", attempts)
}
