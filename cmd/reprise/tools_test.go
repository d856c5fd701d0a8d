package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

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
	r = runCLI(t, nil, "timeline", "-o", trace, db)
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
