package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
)

func TestRecordReplayInfo(t *testing.T) {
	kvmtest.Require(t)
	tp := filepath.Join(t.TempDir(), "run.tape")
	rec := runCLI(t, nil, "record", "-o", tp, "syn_cont", "iters=100", "work=8000")
	require.Equal(t, 0, rec.code, rec.stderr)
	require.Contains(t, rec.stderr, "recorded "+tp)
	require.Contains(t, rec.stderr, "swbc positions")

	rep := runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Equal(t, rec.stdout, rep.stdout, "replayed console differs")
	require.Contains(t, rep.stderr, "replay matched")

	info := runCLI(t, nil, "info", tp)
	require.Equal(t, 0, info.code, info.stderr)
	for _, want := range []string{"swbc", "syn_cont iters=100 work=8000", "kit.elf", "interrupt", "exited, status 0", "damage       none"} {
		require.Contains(t, info.stdout, want)
	}
}

// A recorder killed outright leaves a tape that replays, and is checked,
// up to its last flushed chunk.
func TestKilledRecorderLeavesReplayableTape(t *testing.T) {
	kvmtest.Require(t)
	tp := filepath.Join(t.TempDir(), "killed.tape")
	cmd := exec.Command(reprise, "record", "--timer-hz", "250", "-o", tp, "syn_cont", "iters=5000", "work=8000")
	require.NoError(t, cmd.Start())
	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	info := runCLI(t, nil, "info", tp)
	require.Equal(t, 0, info.code, info.stderr)
	// Whole chunks and no end event, or a torn last chunk: either way not
	// a finished recording.
	require.Regexp(t, `cut short|truncated`, info.stdout)

	rep := runCLI(t, nil, "replay", "-q", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Contains(t, rep.stderr, "notice: tape ends after")
	require.Contains(t, rep.stderr, "replayed and checked everything up to there")
}

// Ctrl-C ends a recording cleanly at a repeatable point; its replay stops
// at exactly that point and matches.
func TestInterruptedRecordingReplays(t *testing.T) {
	kvmtest.Require(t)
	tp := filepath.Join(t.TempDir(), "int.tape")
	cmd := exec.Command(reprise, "record", "-o", tp, "syn_cont", "iters=5000", "work=8000")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	time.Sleep(800 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	var ee *exec.ExitError
	require.ErrorAs(t, cmd.Wait(), &ee, errb.String())
	require.Equal(t, exitInterrupted, ee.ExitCode(), "Ctrl-C is reported as run reports it")
	require.Contains(t, errb.String(), "stopped on request")

	rep := runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Equal(t, out.String(), rep.stdout)
	require.Contains(t, rep.stderr, "stopped where the recording was stopped")
}

func TestRecordPositionSources(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	r := runCLI(t, nil, "record", "--position", "exit-sync", "-o", filepath.Join(dir, "e.tape"), "deadlock_gatelock")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "exit-sync positions")
	rep := runCLI(t, nil, "replay", "-q", filepath.Join(dir, "e.tape"))
	require.Equal(t, 0, rep.code, rep.stderr)

	// This host has no PMU: the recorder says why instead of recording.
	r = runCLI(t, nil, "record", "--position", "pmu", "-o", filepath.Join(dir, "p.tape"), "hello")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "pmu:")
	_, err := os.Stat(filepath.Join(dir, "p.tape"))
	require.True(t, os.IsNotExist(err), "a refused recording must not leave a tape")

	// The plain kit has no branch counter: swbc is refused, auto falls back.
	r = runCLI(t, nil, "record", "--plain", "--position", "swbc", "-o", filepath.Join(dir, "s.tape"), "hello")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "no software branch counter")
	r = runCLI(t, nil, "record", "--plain", "-o", filepath.Join(dir, "a.tape"), "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "exit-sync positions")

	r = runCLI(t, nil, "record", "--position", "bogus", "-o", filepath.Join(dir, "b.tape"), "hello")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "unknown position source")
}

func TestReplayDamagedTape(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tp := filepath.Join(dir, "run.tape")
	rec := runCLI(t, nil, "record", "-o", tp, "syn_cont", "iters=100", "work=8000")
	require.Equal(t, 0, rec.code, rec.stderr)
	raw, err := os.ReadFile(tp)
	require.NoError(t, err)
	raw[len(raw)-10] ^= 0xff
	bad := filepath.Join(dir, "bad.tape")
	require.NoError(t, os.WriteFile(bad, raw, 0o644))
	r := runCLI(t, nil, "replay", "-q", bad)
	require.Equal(t, exitDamaged, r.code, r.stderr)
	require.Contains(t, r.stderr, "corrupt at byte")

	info := runCLI(t, nil, "info", bad)
	require.Contains(t, info.stdout, "corrupt at byte")

	r = runCLI(t, nil, "replay", filepath.Join(dir, "missing.tape"))
	require.Equal(t, exitFailure, r.code)
	r = runCLI(t, nil, "info", "/etc/passwd")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "not a reprise tape")
}

// A guest fault is recorded; the replay reproduces it and says so.
func TestRecordedFaultReplays(t *testing.T) {
	kvmtest.Require(t)
	tp := filepath.Join(t.TempDir(), "crash.tape")
	r := runCLI(t, nil, "record", "-o", tp, "crash", "kind=null")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "the fault is recorded")
	rep := runCLI(t, nil, "replay", "-q", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Contains(t, rep.stderr, "recorded guest fault reproduced")
}

// baseImage writes a read-only disk base image of size bytes in dir.
func baseImage(t *testing.T, dir string, size int) string {
	base := filepath.Join(dir, "base.img")
	require.NoError(t, os.WriteFile(base, bytes.Repeat([]byte("reprise!"), size/8), 0o444))
	return base
}

func TestDiskFlags(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	base := baseImage(t, dir, 1<<20)
	r := runCLI(t, nil, "run", "--disk", base, "disk", "mode=rw")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "truth: capacity=2048")
	// No timer: an idle guest waiting for its disk is woken by the disk.
	r = runCLI(t, nil, "run", "--timer-hz", "0", "--disk", base, "disk", "mode=rw")
	require.Equal(t, 0, r.code, r.stderr)

	tp := filepath.Join(dir, "disk.tape")
	r = runCLI(t, nil, "record", "--disk", base, "-o", tp, "disk", "mode=rw")
	require.Equal(t, 0, r.code, r.stderr)
	_, err := os.Stat(tp + ".overlay")
	require.NoError(t, err, "the recording's overlay is kept beside the tape")
	rep := runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Equal(t, r.stdout, rep.stdout)
	info := runCLI(t, nil, "info", tp)
	require.Contains(t, info.stdout, base)

	r = runCLI(t, nil, "run", "--disk", filepath.Join(dir, "missing.img"), "disk")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "base image")
	r = runCLI(t, nil, "run", "disk")
	require.Equal(t, 3, r.code, "no disk: the workload says so with status 3")
}

// Repeated replays of one tape with different probe sets fill one event
// database, each its own run; the first run is left as it was.
func TestReplayIntoEventDB(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tp, db := filepath.Join(dir, "run.tape"), filepath.Join(dir, "events.db")
	require.Equal(t, 0, runCLI(t, nil, "record", "-o", tp, "syn_cont", "iters=50", "work=8000").code)

	r := runCLI(t, nil, "replay", "-q", "--probe", "lock=mutex_lock m=arg0", "--db", db, tp)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "run 1 in "+db)
	hits := runCLI(t, nil, "events", db, "--run", "1", "--kind", "probe-entry")
	require.Equal(t, 0, hits.code, hits.stderr)
	// A header line, then one line per acquisition: 16 threads × 50 × 2 locks.
	require.Equal(t, 1+1600, len(strings.Split(strings.TrimSpace(hits.stdout), "\n")))
	first := runCLI(t, nil, "events", db, "--run", "1")
	require.Equal(t, 0, first.code, first.stderr)
	require.Contains(t, first.stdout, "thread-create", "the trace ring's events are in the run too")

	r = runCLI(t, nil, "replay", "-q", "--sample", "50000", "--probe", "unlock=mutex_unlock", "--db", db, tp)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "run 2 in "+db)

	runs := runCLI(t, nil, "events", db)
	require.Contains(t, runs.stdout, "lock")
	require.Contains(t, runs.stdout, "unlock")
	again := runCLI(t, nil, "events", db, "--run", "1")
	require.Equal(t, first.stdout, again.stdout, "run 1 changed when run 2 was added")
	samples := runCLI(t, nil, "events", db, "--run", "2", "--kind", "sample", "--limit", "5")
	require.Equal(t, 6, len(strings.Split(strings.TrimSpace(samples.stdout), "\n")), samples.stdout)

	bad := runCLI(t, nil, "replay", "-q", "--probe", "mutex_lock+0x2", "--db", db, tp)
	require.Equal(t, exitUsage, bad.code)
	require.Contains(t, bad.stderr, "inside the instruction")
	bad = runCLI(t, nil, "replay", "-q", "--probe", "mutex_lock", tp)
	require.Equal(t, exitUsage, bad.code)
	require.Contains(t, bad.stderr, "--db")
}

// Checkpoints through the CLI: a replay writes them beside the tape, a
// replay --from the middle starts there and prints the rest of the
// output, and a damaged checkpoint file is never used: its damage is
// named with its offset, and the replay uses the whole checkpoints before
// it.
func TestCheckpointCLI(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tp := filepath.Join(dir, "p.tape")
	r := runCLI(t, nil, "record", "-o", tp, "periodic", "count=20")
	require.Equal(t, 0, r.code, r.stderr)
	full := r.stdout
	r = runCLI(t, nil, "replay", "--checkpoint-every", "50ms", tp)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, full, r.stdout)
	require.Regexp(t, `wrote \d+ checkpoints to `+regexp.QuoteMeta(tp)+`\.ckpt`, r.stderr)

	r = runCLI(t, nil, "replay", "--from", "300ms", tp)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `starting at checkpoint ([2-9]|\d\d+), record time`, r.stderr, "past the first")
	require.Contains(t, r.stderr, "replay matched")
	require.True(t, strings.HasSuffix(full, r.stdout), "the output from the checkpoint on")

	r = runCLI(t, nil, "replay", "--from", "nonsense", tp)
	require.Equal(t, exitUsage, r.code, r.stderr)

	raw, err := os.ReadFile(tp + ".ckpt")
	require.NoError(t, err)
	raw[len(raw)/2] ^= 0xFF
	require.NoError(t, os.WriteFile(tp+".ckpt", raw, 0o644))
	r = runCLI(t, nil, "replay", "--from", "300ms", tp)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `warning: checkpoint file .*: at byte \d+: .*ignoring it`, r.stderr)
	require.True(t, strings.HasSuffix(full, r.stdout), "the output from a whole checkpoint on")
	r = runCLI(t, nil, "replay", tp) // from boot, checking the whole checkpoints
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `warning: checkpoint file .*: at byte \d+`, r.stderr)
	require.Equal(t, full, r.stdout)
}

// A replay split at the checkpoints its recording took, through the CLI: --jobs 2 in one
// process, and --segment 1/2 and 2/2 as two processes (as two pods of a
// Kubernetes Indexed Job would run them) joined by reprise merge, store
// the events a replay from boot stores.
func TestSplitReplayCLI(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tp := filepath.Join(dir, "s.tape")
	// The recording takes the checkpoints: its first replay is already split.
	r := runCLI(t, nil, "record", "--checkpoint-every", "10ms", "-o", tp, "syn_cont", "iters=300", "work=8000")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `wrote ([2-9]|[1-9]\d+) checkpoints to `+regexp.QuoteMeta(tp)+`\.ckpt`, r.stderr)
	r = runCLI(t, nil, "record", "--checkpoint-every", "10ms", "-o", filepath.Join(dir, "other.tape"), "--checkpoints", tp+".ckpt", "syn_cont")
	require.Equal(t, exitFailure, r.code, "an existing checkpoint file is never overwritten: %s", r.stderr)

	splitReplaysMatch(t, dir, tp, "probe-entry,probe-return,switch,thread-create,thread-exit")
}

// splitReplaysMatch replays the tape tp with lock probes into DBs in dir
// — from boot, with --jobs 2, and as --segment 1/2 and 2/2 merged — and
// checks that the split replays store the events of kinds a replay from
// boot stores, and that lockstat reports the same.
func splitReplaysMatch(t *testing.T, dir, tp, kinds string) {
	t.Helper()
	db := func(name string) string { return filepath.Join(dir, name) }
	for _, args := range [][]string{
		{"--db", db("seq")},
		{"--jobs", "2", "--db", db("par")},
		{"--segment", "1/2", "--db", db("s1")},
		{"--segment", "2/2", "--db", db("s2")},
	} {
		r := runCLI(t, nil, append(append([]string{"replay", "-q", "--locks"}, args...), tp)...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
	}
	r := runCLI(t, nil, "merge", "-o", db("merged"), db("s2"), db("s1"))
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, nil, "merge", "-o", db("half"), db("s1"))
	require.Equal(t, exitUsage, r.code, "a share missing: %s", r.stderr)
	require.Contains(t, r.stderr, "missing")

	guest := func(name string) []string {
		ev := runCLI(t, nil, "events", "--json", "--run", "1", "--kind", kinds, db(name))
		require.Equal(t, 0, ev.code, ev.stderr)
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(ev.stdout), "\n") {
			var e map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &e))
			delete(e, "seq") // arrival numbers count the host view's records too, which a split replay stores with its last segment
			b, _ := json.Marshal(e)
			out = append(out, string(b))
		}
		return out
	}
	seq := guest("seq")
	require.NotEmpty(t, seq)
	require.Equal(t, seq, guest("par"), "--jobs 2")
	require.Equal(t, seq, guest("merged"), "--segment 1/2, 2/2 and merge")
	locks := func(name string) string {
		r := runCLI(t, nil, "lockstat", db(name))
		require.Equal(t, 0, r.code, r.stderr)
		return r.stdout
	}
	require.Equal(t, locks("seq"), locks("par"), "lockstat of --jobs 2")
	require.Equal(t, locks("seq"), locks("merged"), "lockstat of the merged shares")
}
