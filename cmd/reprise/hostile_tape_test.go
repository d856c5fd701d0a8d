package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// forgeFirstCheckpoint rewrites the first CKPT frame of the checkpoint
// file at path with edit, its compression and checksum made right again,
// as a forger would.
func forgeFirstCheckpoint(t *testing.T, path string, edit func(c map[string]any)) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	off := len("reprise checkpoints\n")
	for string(raw[off:off+4]) != "CKPT" {
		off += 12 + int(binary.LittleEndian.Uint32(raw[off+4:]))
		require.Less(t, off+12, len(raw), "no CKPT frame in %s", path)
	}
	size := int(binary.LittleEndian.Uint32(raw[off+4:]))
	dec, err := zstd.NewReader(nil)
	require.NoError(t, err)
	defer dec.Close()
	meta, err := dec.DecodeAll(raw[off+12:off+12+size], nil)
	require.NoError(t, err)
	var c map[string]any
	require.NoError(t, json.Unmarshal(meta, &c))
	edit(c)
	meta, err = json.Marshal(c)
	require.NoError(t, err)
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	body := enc.EncodeAll(meta, nil)
	hdr := make([]byte, 12)
	copy(hdr, "CKPT")
	binary.LittleEndian.PutUint32(hdr[4:], uint32(len(body)))
	binary.LittleEndian.PutUint32(hdr[8:], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	out := append(append(append(bytes.Clone(raw[:off]), hdr...), body...), raw[off+12+size:]...)
	require.NoError(t, os.WriteFile(path, out, 0o644))
}

// A checkpoint's register digest is 8 bytes; one forged to 1 MiB made a
// replay print it as 2 MB of hex in its divergence message. What a
// divergence quotes of each state is bounded.
func TestForgedDigestIsNotPrintedWhole(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tp := filepath.Join(dir, "d.tape")
	r := runCLI(t, nil, "record", "--checkpoint-every", "10ms", "-o", tp, "syn_cont", "iters=100", "work=8000")
	require.Equal(t, 0, r.code, r.stderr)
	forgeFirstCheckpoint(t, tp+".ckpt", func(c map[string]any) {
		c["Digest"] = bytes.Repeat([]byte{0xAB}, 1<<20) // JSON: base64, as []byte is
	})
	r = runCLI(t, nil, "replay", "-q", tp)
	require.Contains(t, []int{exitDivergence, exitDamaged}, r.code, "a forged digest is a divergence or damage: %.2000s", r.stderr)
	require.Less(t, len(r.stderr), 4096, "the message: %.2000s", r.stderr)
	t.Logf("replay of a 1 MiB digest: exit %d, %d bytes on stderr", r.code, len(r.stderr))
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// Nothing a replay, a recording or a merge writes replaces a file or
// lands among other files: `replay --checkpoint-every --checkpoints TAPE
// TAPE` truncated the tape (and then "replayed" 0 events, exit 0);
// `record --checkpoints X -o X` refused but left X; --db and merge -o
// wrote a DB into any directory. Each is refused, with nothing left
// behind; adding a run to an existing event DB still works.
func TestOutputsNeverOverwrite(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tp := filepath.Join(dir, "s.tape")
	r := runCLI(t, nil, "record", "--checkpoint-every", "10ms", "-o", tp, "syn_cont", "iters=100", "work=8000")
	require.Equal(t, 0, r.code, r.stderr)
	tape, err := os.ReadFile(tp)
	require.NoError(t, err)

	precious := filepath.Join(dir, "precious")
	require.NoError(t, os.WriteFile(precious, []byte("precious"), 0o644))
	for _, target := range []string{tp, precious, tp + ".ckpt"} {
		before, err := os.ReadFile(target)
		require.NoError(t, err)
		r = runCLI(t, nil, "replay", "-q", "--checkpoint-every", "10ms", "--checkpoints", target, tp)
		require.Equal(t, exitFailure, r.code, "--checkpoints %s: %s", target, r.stderr)
		require.Contains(t, r.stderr, target+" exists; --checkpoint-every never overwrites a file")
		after, err := os.ReadFile(target)
		require.NoError(t, err)
		require.Equal(t, before, after, target)
	}
	r = runCLI(t, nil, "replay", "-q", tp)
	require.Equal(t, 0, r.code, r.stderr)

	same := filepath.Join(dir, "same")
	r = runCLI(t, nil, "record", "--checkpoint-every", "10ms", "--checkpoints", same, "-o", filepath.Join(dir, ".", "same"), "syn_cont")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "name the same file")
	require.NoFileExists(t, same)

	others := filepath.Join(dir, "others")
	require.NoError(t, os.Mkdir(others, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(others, "notes.txt"), []byte("mine"), 0o644))
	r = runCLI(t, nil, "replay", "-q", "--db", others, tp)
	require.Equal(t, exitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, others+" holds files but no event database")
	require.Equal(t, []string{"notes.txt"}, dirNames(t, others))

	share := filepath.Join(dir, "share")
	r = runCLI(t, nil, "replay", "-q", "--segment", "1/1", "--db", share, tp)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, nil, "merge", "-o", others, share)
	require.Equal(t, exitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, others+" holds files but no event database")
	require.Equal(t, []string{"notes.txt"}, dirNames(t, others))

	// An event DB takes more runs; a directory made for a replay that
	// stored nothing is removed.
	seq := filepath.Join(dir, "seq")
	for run := 1; run <= 2; run++ {
		r = runCLI(t, nil, "replay", "-q", "--db", seq, tp)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stderr, fmt.Sprintf("run %d in %s", run, seq))
	}
	r = runCLI(t, nil, "merge", "-o", seq, share)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "run 3 in "+seq)
	bad := filepath.Join(dir, "bad.tape")
	require.NoError(t, os.WriteFile(bad, tape[:30], 0o644))
	none := filepath.Join(dir, "none")
	r = runCLI(t, nil, "replay", "-q", "--db", none, bad)
	require.Equal(t, exitDamaged, r.code, r.stderr)
	require.NoDirExists(t, none)
}

// scratchDirs lists the directories in tmp whose name starts with prefix.
func scratchDirs(t *testing.T, tmp, prefix string) []string {
	t.Helper()
	var out []string
	for _, name := range dirNames(t, tmp) {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out
}

// killWhenScratch starts reprise with args and TMPDIR=tmp, waits for a
// directory starting with prefix to appear in tmp, and kills it with
// SIGKILL there, as the OOM killer or a job scheduler would.
func killWhenScratch(t *testing.T, tmp, prefix string, args ...string) {
	t.Helper()
	cmd := exec.Command(reprise, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(time.Minute)
	for len(scratchDirs(t, tmp, prefix)) == 0 {
		require.True(t, time.Now().Before(deadline), "no %s* in %s: %s", prefix, tmp, errb.String())
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.NotEmpty(t, scratchDirs(t, tmp, prefix), "SIGKILL leaves the scratch directory")
}

// A split replay or a live run with a disk killed with SIGKILL cannot
// remove its scratch directory (segment DBs: 62 MB each time; the disk
// overlay); the next reprise to make one removes those of dead
// processes, as stale trace instances are.
func TestKilledReprisesScratchIsReaped(t *testing.T) {
	kvmtest.Require(t)
	dir, tmp := t.TempDir(), t.TempDir()
	tp := filepath.Join(dir, "s.tape")
	r := runCLI(t, nil, "record", "--checkpoint-every", "10ms", "-o", tp, "syn_cont", "iters=300", "work=8000")
	require.Equal(t, 0, r.code, r.stderr)
	env := []string{"TMPDIR=" + tmp}

	killWhenScratch(t, tmp, "reprise-segments", "replay", "-q", "--jobs", "2", "--db", filepath.Join(dir, "killed"), tp)
	r = runCLI(t, env, "replay", "-q", "--jobs", "2", "--db", filepath.Join(dir, "db"), tp)
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, scratchDirs(t, tmp, "reprise-segments"), "the killed replay's segments are removed")

	base := baseImage(t, dir, 1<<16)
	killWhenScratch(t, tmp, "reprise-overlay", "run", "--disk", base, "cpu", "digits=100000")
	r = runCLI(t, env, "run", "--disk", base, "disk", "mode=read")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, scratchDirs(t, tmp, "reprise-overlay"), "the killed run's overlay is removed")
}
