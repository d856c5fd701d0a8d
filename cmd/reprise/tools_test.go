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
