package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/cprog"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/tape"
)

// replayOpens runs `reprise replay args…` in this process, as main does,
// and returns how many times it opened a tape.
func replayOpens(t *testing.T, args ...string) int64 {
	t.Helper()
	root := newRootCmd(nil)
	var stderr bytes.Buffer
	root.SetArgs(append([]string{"replay", "-q"}, args...))
	root.SetOut(io.Discard)
	root.SetErr(&stderr)
	before := tape.Opens()
	err := root.ExecuteContext(context.Background())
	require.NoError(t, err, "%v: %s", args, stderr.String())
	return tape.Opens() - before
}

// A replay opens its tape once, whatever it does besides — reports the
// host files it names, opens its checkpoints, resolves probes against its
// image or its program's files, starts at a checkpoint, replays segments
// on several machines at once: every step reads the recording opened
// once (replayer.Recording), none opens the path again (a kit replay with
// probes into a DB opened it 5 times, reading the embedded image each
// time).
func TestReplayOpensItsTapeOnce(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	db := func(name string) string { return filepath.Join(dir, name) }
	kit := db("kit.tape")
	r := runCLI(t, nil, "record", "--checkpoint-every", "10ms", "-o", kit, "cpu", "digits=3000")
	require.Equal(t, 0, r.code, r.stderr)
	bin := cprog.Build(t, "gcc", "pipeline", "-O1", "-pthread")
	prog := db("prog.tape")
	r = runCLI(t, nil, "record", "--mem", "64M", "--checkpoint-every", "10ms", "-o", prog, "--", bin, "40")
	require.Equal(t, 0, r.code, r.stderr)

	// The splits are the program's: a kit replay from its last checkpoint
	// diverges now and then on main too (cpu digits=3000, a checkpoint
	// every 10ms: "expected a stop at branch 0"), which is not what this
	// test is about.
	for _, c := range []struct {
		name string
		args []string
	}{
		{"kit", []string{"--probe", "lock=mutex_lock m=arg0", "--db", db("kit-probe"), kit}},
		{"program", []string{"--locks", "--db", db("prog-locks"), prog}},
		{"program from a checkpoint", []string{"--locks", "--from", "1h", "--db", db("prog-from"), prog}},
		{"program in parallel", []string{"--locks", "--jobs", "2", "--db", db("prog-jobs"), prog}},
		{"program share", []string{"--locks", "--segment", "1/2", "--db", db("prog-share"), prog}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, int64(1), replayOpens(t, c.args...))
		})
	}
}
