package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// The README's main job: one command records, replays and prints every
// report, and leaves the files it names.
func TestDemo(t *testing.T) {
	kvmtest.Require(t)
	dir := filepath.Join(t.TempDir(), "demo")
	r := runCLI(t, nil, "demo", "--dir", dir)
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	for _, want := range []string{
		"replay matched the recording", "locks of run 1", "level2", "per thread",
		"no potential deadlock", "functions by self samples", "comp", "call graph",
		"potential deadlock 1 of 1: 3 threads", "Done. Kept in " + dir,
	} {
		require.Contains(t, r.stdout, want)
	}
	for _, f := range []string{"syn_cont.tape", "syn_cont.db", "syn_cont.pb.gz", "deadlock_transitive.tape", "deadlock_transitive.db"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
	f, err := os.Open(filepath.Join(dir, "syn_cont.pb.gz"))
	require.NoError(t, err)
	defer f.Close()
	p, err := profile.Parse(f)
	require.NoError(t, err)
	require.NotEmpty(t, p.Sample)

	again := runCLI(t, nil, "demo", "--dir", dir)
	require.Equal(t, 0, again.code, "the demo runs again over its own files: %s", again.stderr)

	// The tools on the demo's databases: JSON, exit statuses, bad input.
	db := filepath.Join(dir, "syn_cont.db")
	r = runCLI(t, nil, "lockstat", "--json", "--sort", "locked", "--top", "2", db)
	require.Equal(t, 0, r.code, r.stderr)
	var ls struct {
		Locks []struct {
			Name     string
			Acquired uint64
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ls))
	require.Len(t, ls.Locks, 2)
	require.Equal(t, uint64(80), ls.Locks[0].Acquired)

	r = runCLI(t, nil, "deadlock", filepath.Join(dir, "deadlock_transitive.db"))
	require.Equal(t, 1, r.code, "a potential deadlock exits 1: %s", r.stderr)
	require.Contains(t, r.stdout, "L1@")

	r = runCLI(t, nil, "lockstat", "--sort", "bogus", db)
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "unknown sort key")
	r = runCLI(t, nil, "lockstat", filepath.Join(dir, "nosuch.db"))
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "no event database")
	r = runCLI(t, nil, "deadlock", "--run", "9", db)
	require.Equal(t, exitFailure, r.code)
}

// The host-view tools on tapes of the bundled workloads: preempt, overhead
// and timeline on a full recording, and a clear word when the host view
// is missing.
func TestHostViewTools(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tapePath, db := filepath.Join(dir, "p.tape"), filepath.Join(dir, "p.db")
	r := runCLI(t, nil, "record", "-o", tapePath, "periodic", "count=10", "bg=1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "host records")
	r = runCLI(t, nil, "replay", "-q", "--db", db, tapePath)
	require.Equal(t, 0, r.code, r.stderr)

	r = runCLI(t, nil, "preempt", "--top", "0", "--thread", "1", db) // every holder: the VMM among them, however busy the host
	require.Equal(t, 0, r.code, r.stderr)
	for _, want := range []string{"vCPU states", "RUNNING", "PREEMPTED", "execution flow of thread 1", "per system", "p guest", "VMM: "} {
		require.Contains(t, r.stdout, want)
	}
	r = runCLI(t, nil, "preempt", "--json", "--thread", "2", db)
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		VCPUs []struct{ Total int64 }
		Flow  struct {
			TID         uint32
			Wanted, Ran int64
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	require.Len(t, rep.VCPUs, 1)
	require.Positive(t, rep.VCPUs[0].Total)
	require.EqualValues(t, 2, rep.Flow.TID)
	require.Positive(t, rep.Flow.Ran)
	require.LessOrEqual(t, rep.Flow.Ran, rep.Flow.Wanted)
	r = runCLI(t, nil, "preempt", "--thread", "99", db)
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "no guest thread 99")

	r = runCLI(t, nil, "overhead", db)
	require.Equal(t, 0, r.code, r.stderr)
	for _, want := range []string{"stays in the guest", "guest", "VMM", "IO", "preempted", "idle"} {
		require.Contains(t, r.stdout, want)
	}

	trace := filepath.Join(dir, "trace.json")
	r = runCLI(t, nil, "timeline", "--json", "-o", trace, db)
	require.Equal(t, 0, r.code, r.stderr)
	raw, err := os.ReadFile(trace)
	require.NoError(t, err)
	var tr struct {
		TraceEvents []struct {
			Ph, Name string
			Pid, Tid int
			Dur      float64
			Args     map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(raw, &tr), "valid trace-event JSON")
	tracks := map[string]bool{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "M" && e.Name == "thread_name" {
			tracks[e.Args["name"].(string)] = true
		}
	}
	require.Contains(t, tracks, "guest thread 1")
	require.Contains(t, tracks, "guest thread 2")
	jsonSlices := map[string]int{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" {
			jsonSlices[e.Name]++
		}
	}

	// The default, Perfetto's protobuf, decoded by protoc: the same
	// tracks and slices.
	pb := filepath.Join(dir, "trace.pftrace")
	r = runCLI(t, nil, "timeline", "-o", pb, db)
	require.Equal(t, 0, r.code, r.stderr)
	pt := decodePerfetto(t, pb)
	require.Contains(t, pt.tracks, "guest thread 1")
	require.Contains(t, pt.tracks, "guest thread 2")
	require.Equal(t, jsonSlices, pt.slices, "the protobuf trace's slices are the JSON trace's")

	r = runCLI(t, nil, "timeline", "--max-events", "50", "-o", trace, db)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "merged")

	off, offDB := filepath.Join(dir, "off.tape"), filepath.Join(dir, "off.db")
	r = runCLI(t, nil, "record", "--host", "off", "-o", off, "hello")
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, nil, "replay", "-q", "--db", offDB, off)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, nil, "overhead", offDB)
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "no host view")
	r = runCLI(t, nil, "record", "--host", "bogus", "-o", off, "hello")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "unknown host mode")
}

// Every tool opens its event database read-only: a missing directory or
// one that holds no event database is refused, and left as it was.
func TestToolsRefuseWhatIsNoDB(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "nosuch.db")
	other := filepath.Join(base, "photos")
	require.NoError(t, os.Mkdir(other, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "cat.jpg"), []byte("not a DB"), 0o644))
	trace := filepath.Join(base, "trace.json")
	tools := [][]string{
		{"events"}, {"events", "--run", "1"}, {"lockstat"}, {"deadlock"}, {"profile"},
		{"preempt"}, {"overhead"}, {"timeline", "-o", trace},
	}
	for _, tool := range tools {
		r := runCLI(t, nil, append(tool, missing)...)
		require.Equal(t, exitUsage, r.code, "%v on a missing directory: %s", tool, r.stderr)
		require.Contains(t, r.stderr, "no event database at "+missing)
		require.NoDirExists(t, missing, "%v created it", tool)

		r = runCLI(t, nil, append(tool, other)...)
		require.Equal(t, exitUsage, r.code, "%v on an unrelated directory: %s", tool, r.stderr)
		require.Contains(t, r.stderr, "not an event DB")
		require.Contains(t, r.stderr, other)
		entries, err := os.ReadDir(other)
		require.NoError(t, err)
		require.Len(t, entries, 1, "%v wrote into %s", tool, other)
	}
	require.NoFileExists(t, trace)
}

// A replay interrupted while it writes leaves an incomplete run: its
// events stop where it stopped. Every tool then reads the latest complete
// run and says which newer incomplete run it skipped; named with --run,
// the incomplete run is read with a warning. While the replay writes, the
// database is in use, and the tools and a second replay say so.
func TestToolsSkipIncompleteRuns(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tapePath, db := filepath.Join(dir, "s.tape"), filepath.Join(dir, "s.db")
	r := runCLI(t, nil, "record", "-o", tapePath, "syn_cont")
	require.Equal(t, 0, r.code, r.stderr)
	replay := []string{"replay", "-q", "--locks", "--sample", "5000", "--db", db, tapePath}
	r = runCLI(t, nil, replay...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "run 1 in "+db)

	// Run 2: a replay interrupted a few seconds into its ~10.
	cmd := exec.Command(reprise, replay...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	time.Sleep(2 * time.Second)
	for _, args := range [][]string{{"lockstat", db}, {"events", db}, replay} {
		r = runCLI(t, nil, args...)
		require.Equal(t, exitFailure, r.code, "%v while a replay writes: %s", args[0], r.stderr)
		require.Contains(t, r.stderr, "event database "+db+" is in use by another reprise process (a replay writing to it?)")
	}
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "the replay ended before it was interrupted: %v\n%s", err, stderr.String())
	require.Equal(t, exitInterrupted, ee.ExitCode(), stderr.String())
	m := regexp.MustCompile(`run 2 in .*: (\d+) events \(incomplete\)`).FindStringSubmatch(stderr.String())
	require.NotNil(t, m, stderr.String())
	require.NotEqual(t, "0", m[1], "the interrupted replay kept none of its events")

	r = runCLI(t, nil, "events", db)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `(?m)^2\s+\d+\s+false\s`, r.stdout)

	// By default, every tool reads run 1 and says it skipped run 2.
	skipped := "reading run 1 of " + db + ", the latest complete one; skipped newer incomplete run 2"
	type report struct { // what every tool's JSON says of its run
		Run               uint32
		Incomplete        bool
		SkippedIncomplete []uint32 `json:"skipped_incomplete"`
		Samples           uint64   // profile's
	}
	var rep report
	for _, tool := range []string{"lockstat", "deadlock", "profile", "preempt", "overhead"} {
		r = runCLI(t, nil, tool, "--json", db)
		require.Equal(t, 0, r.code, "%s: %s", tool, r.stderr)
		require.Contains(t, r.stderr, skipped, tool)
		rep = report{}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), tool)
		require.EqualValues(t, 1, rep.Run, tool)
		require.False(t, rep.Incomplete, tool)
		require.Equal(t, []uint32{2}, rep.SkippedIncomplete, tool)
	}
	r = runCLI(t, nil, "profile", db)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "profile: run 1,")
	trace := filepath.Join(dir, "trace.json")
	r = runCLI(t, nil, "timeline", "-o", trace, db)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, skipped)

	// Named, run 2 is read, with a warning, by the tools that need no
	// more than its events.
	incomplete := "warning: run 2 of " + db + " is incomplete: its replay stopped early"
	for _, tool := range []string{"lockstat", "deadlock", "profile"} {
		r = runCLI(t, nil, tool, "--json", "--run", "2", db)
		require.Equal(t, 0, r.code, "%s: %s", tool, r.stderr)
		require.Contains(t, r.stderr, incomplete, tool)
		require.NotContains(t, r.stderr, "skipped", tool)
		rep = report{}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), tool)
		require.EqualValues(t, 2, rep.Run, tool)
		require.True(t, rep.Incomplete, tool)
	}
	require.Positive(t, rep.Samples, "profile of run 2")
	r = runCLI(t, nil, "deadlock", "--run", "2", db)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "no potential deadlock before the cut: the run is incomplete")
	r = runCLI(t, nil, "events", "--run", "2", "--limit", "1", db)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, incomplete)

	// The host-view tools say the run is incomplete, not that its
	// recording has no host view: the replay stores it at the end.
	for _, args := range [][]string{{"preempt"}, {"overhead"}, {"timeline", "-o", trace}} {
		r = runCLI(t, nil, append(args, "--run", "2", db)...)
		require.Equal(t, exitUsage, r.code, "%s: %s", args[0], r.stderr)
		require.Contains(t, r.stderr, "run 2: the run is incomplete: its replay stopped before it stored the host view", args[0])
		require.NotContains(t, r.stderr, "no host view", args[0])
	}
}
