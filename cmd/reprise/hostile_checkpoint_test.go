package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/tape"
)

// Tests of what a split replay, a merge and a replay from a checkpoint do
// with tapes, checkpoint files and segment DBs that were cut, interrupted
// or forged (issue 24): never a run marked complete that is not, never a
// replay that trusts what it did not check.

// splitTape records syn_cont with checkpoints every 10 ms (the recording
// takes them, TAPE.ckpt) and returns the tape's path.
func splitTape(t *testing.T, dir string) string {
	t.Helper()
	kvmtest.Require(t)
	tp := filepath.Join(dir, "s.tape")
	r := runCLI(t, nil, "record", "--checkpoint-every", "10ms", "-o", tp, "syn_cont", "iters=300", "work=8000")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `wrote ([3-9]|[1-9]\d+) checkpoints to `, r.stderr)
	return tp
}

// runOf is run 1 of the DB at dir as `reprise events` lists it: its event
// count and whether it is complete.
func runOf(t *testing.T, dir string) (events int, complete bool) {
	t.Helper()
	r := runCLI(t, nil, "events", dir)
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.GreaterOrEqual(t, len(lines), 2, r.stdout)
	var id int
	var c string
	_, err := fmt.Sscan(lines[1], &id, &events, &c)
	require.NoError(t, err, lines[1])
	return events, c == "true"
}

// guestEvents are the guest's events of run 1 of the DB at dir, without
// their arrival numbers (which count the host view's records too).
func guestEvents(t *testing.T, dir string) []string {
	t.Helper()
	r := runCLI(t, nil, "events", "--json", "--run", "1", "--kind", "probe-entry,probe-return,switch,thread-create,thread-exit", dir)
	require.Equal(t, 0, r.code, r.stderr)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		delete(e, "seq")
		b, _ := json.Marshal(e)
		out = append(out, string(b))
	}
	return out
}

// A tape cut by a killed recorder, with checkpoints past the cut: --jobs
// 2 stores the guest events a replay from boot stores up to the cut (the
// segment that reaches the cut is the last; those after start past it),
// not the first segment's alone marked complete.
func TestSplitReplayOfACutTape(t *testing.T) {
	dir := t.TempDir()
	tp := splitTape(t, dir)
	raw, err := os.ReadFile(tp)
	require.NoError(t, err)
	// Half its events: the header and image come before them, and how
	// much of the tape they are depends on how long the recording ran.
	sum, err := tape.Summarize(tp)
	require.NoError(t, err)
	cut := filepath.Join(dir, "cut.tape")
	require.NoError(t, os.WriteFile(cut, raw[:len(raw)-int(sum.EventBytes()/2)], 0o644))
	ck, err := os.ReadFile(tp + ".ckpt")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cut+".ckpt", ck, 0o644))

	seq, par := filepath.Join(dir, "seq"), filepath.Join(dir, "par")
	r := runCLI(t, nil, "replay", "-q", "--locks", "--db", seq, cut)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "tape ends after")
	r = runCLI(t, nil, "replay", "-q", "--locks", "--jobs", "2", "--db", par, cut)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "tape ends after")
	want := guestEvents(t, seq)
	require.Greater(t, len(want), 100)
	got := guestEvents(t, par)
	require.Equal(t, len(want), len(got), "--jobs 2 of a cut tape: guest events")
	require.Equal(t, want, got, "--jobs 2 of a cut tape")
	_, complete := runOf(t, par)
	require.True(t, complete)
}

// A split replay interrupted by SIGINT stores its run incomplete, says so,
// and a tool reading it warns: never a run marked complete with the
// segments merged before the interrupt.
func TestInterruptedSplitReplayIsIncomplete(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tp := filepath.Join(dir, "s.tape")
	// Ten times splitTape's: a replay of seconds even on an idle host.
	r := runCLI(t, nil, "record", "--checkpoint-every", "50ms", "-o", tp, "syn_cont", "iters=3000", "work=8000")
	require.Equal(t, 0, r.code, r.stderr)
	db := filepath.Join(dir, "db")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// One job: the segments replay one after the other, for seconds.
	cmd := exec.CommandContext(ctx, reprise, "replay", "-q", "--locks", "--jobs", "1", "--db", db, tp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	time.Sleep(2 * time.Second) // past the first segment on an idle host: ~1/10 of the replay
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	require.Error(t, err, "the replay ended before the interrupt: %s", stderr.String())
	require.Equal(t, exitInterrupted, cmd.ProcessState.ExitCode(), stderr.String())
	if !strings.Contains(stderr.String(), "run 1 in") {
		// A host loaded enough that no segment had ended: nothing stored,
		// which is not a complete run either.
		t.Log("interrupted before a segment ended")
		r = runCLI(t, nil, "events", db)
		require.NotRegexp(t, `(?m)^\s*1\s+\d+\s+true`, r.stdout)
		return
	}
	require.Regexp(t, `run 1 in .*: \d+ events \(incomplete\)`, stderr.String())
	_, complete := runOf(t, db)
	require.False(t, complete, "an interrupted replay's run")
	r = runCLI(t, nil, "lockstat", db)
	require.Regexp(t, `run 1 .*incomplete`, r.stderr)
}

// A split replay whose segment diverges (its last checkpoint forged, so
// the segment before it fails its check there) stores its run
// incomplete, with the segments before it: never complete.
func TestFailedSplitReplayIsIncomplete(t *testing.T) {
	dir := t.TempDir()
	tp := splitTape(t, dir)
	r := runCLI(t, nil, "replay", "--from", "1h", tp)
	require.Equal(t, 0, r.code, r.stderr)
	var n int
	_, err := fmt.Sscanf(regexp.MustCompile(`starting at checkpoint \d+`).FindString(r.stderr), "starting at checkpoint %d", &n)
	require.NoError(t, err, r.stderr)
	forgeCheckpoints(t, tp+".ckpt", func(i int, b []byte) []byte {
		if i != n-1 {
			return b
		}
		return replace(`"Digest":"[^"]*"`, `"Digest":"AQIDBAUGBwg="`)(i, b)
	})
	db := filepath.Join(dir, "db")
	r = runCLI(t, nil, "replay", "-q", "--locks", "--jobs", "2", "--db", db, tp)
	require.Equal(t, exitDivergence, r.code, r.stderr)
	require.Regexp(t, `run 1 in .*: \d+ events \(incomplete\)`, r.stderr)
	events, complete := runOf(t, db)
	require.False(t, complete, "a failed replay's run")
	require.Positive(t, events, "the segments before the failed one")
}

// replayShare replays share i/n of the tape tp into the DB dir with extra flags.
func replayShare(t *testing.T, tp, dir, i string, flags ...string) {
	t.Helper()
	r := runCLI(t, nil, append(append([]string{"replay", "-q", "--locks", "--segment", i, "--db", dir}, flags...), tp)...)
	require.Equal(t, 0, r.code, r.stderr)
}

// setNote rewrites the note of run 1 of the DB at dir, as a forger would.
func setNote(t *testing.T, dir string, edit func(string) string) {
	t.Helper()
	db, err := eventdb.Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	r, err := db.Run(1)
	require.NoError(t, err)
	require.NoError(t, db.SetNote(1, edit(r.Note)))
}

// merge refuses shares that are not the shares of one split replay of the
// tape they name: two recordings made at the same path, a note forged to
// claim every segment (or none), shares that sampled differently. Each
// was merged into one run marked complete.
func TestMergeChecksTheShares(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	db := func(name string) string { return filepath.Join(dir, name) }
	tp := db("p.tape")
	record := func() {
		r := runCLI(t, nil, "record", "--checkpoint-every", "400ms", "-o", tp, "periodic", "count=20")
		require.Equal(t, 0, r.code, r.stderr)
	}
	record()
	replayShare(t, tp, db("a1"), "1/2")
	replayShare(t, tp, db("a2"), "2/2")
	replayShare(t, tp, db("sampled2"), "2/2", "--sample", "50000")
	r := runCLI(t, nil, "merge", "-o", db("ok"), db("a1"), db("a2"))
	require.Equal(t, 0, r.code, r.stderr)

	r = runCLI(t, nil, "merge", "-o", db("mixed"), db("a1"), db("sampled2"))
	require.Equal(t, exitUsage, r.code, "shares that sampled differently: %s", r.stderr)

	for _, forged := range []struct{ name, note string }{
		{"all", "segments 1 to %[1]d of %[1]d"},
		{"none", "segments 1 to 0 of 0"},
	} {
		name := "forged-" + forged.name
		require.NoError(t, os.CopyFS(db(name), os.DirFS(db("a1"))))
		setNote(t, db(name), func(note string) string {
			var from, to, total int
			_, err := fmt.Sscanf(note, "segments %d to %d of %d", &from, &to, &total)
			require.NoError(t, err, note)
			claim := fmt.Sprintf(forged.note, total)
			if i := strings.Index(note, ";"); i >= 0 {
				claim += note[i:] // the hashes as the replay wrote them
			}
			return claim
		})
		r = runCLI(t, nil, "merge", "-o", db("merged-"+forged.name), db(name))
		require.Equal(t, exitUsage, r.code, "a share whose note claims %s: %s", forged.name, r.stderr)
	}

	// Another recording made at the same path: its shares are not the
	// first one's (both split into 3 segments).
	require.NoError(t, os.Remove(tp))
	require.NoError(t, os.Remove(tp+".ckpt"))
	record()
	replayShare(t, tp, db("b2"), "2/2")
	r = runCLI(t, nil, "merge", "-o", db("two"), db("a1"), db("b2"))
	require.Equal(t, exitUsage, r.code, "shares of two recordings: %s", r.stderr)
	require.Contains(t, r.stderr, "another split replay")
	r = runCLI(t, nil, "merge", "-o", db("stale"), db("a1"), db("a2"))
	require.Equal(t, exitUsage, r.code, "shares of the tape that was at the path: %s", r.stderr)
}

// forgeCheckpoints rewrites the JSON of every checkpoint of the
// checkpoint file at path with edit, as a forger would: the file still
// verifies (every frame's checksum is recomputed).
func forgeCheckpoints(t *testing.T, path string, edit func(i int, meta []byte) []byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	const magic = "reprise checkpoints\n"
	require.True(t, bytes.HasPrefix(raw, []byte(magic)))
	out := []byte(magic)
	dec, err := zstd.NewReader(nil)
	require.NoError(t, err)
	defer dec.Close()
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer enc.Close()
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	i, changed := 0, false
	for off := len(magic); off < len(raw); {
		tag, size := string(raw[off:off+4]), int(binary.LittleEndian.Uint32(raw[off+4:]))
		body := raw[off+12 : off+12+size]
		off += 12 + size
		if tag == "CKPT" {
			meta, err := dec.DecodeAll(body, nil)
			require.NoError(t, err)
			forged := edit(i, meta)
			changed = changed || !bytes.Equal(meta, forged)
			body = enc.EncodeAll(forged, nil)
			i++
		}
		out = append(out, tag...)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
		out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(body, castagnoli))
		out = append(out, body...)
	}
	require.True(t, changed, "the forgery changed nothing")
	require.NoError(t, os.WriteFile(path, out, 0o644))
}

// replace is an edit for forgeCheckpoints: the first match of re
// replaced with repl.
func replace(re, repl string) func(int, []byte) []byte {
	r := regexp.MustCompile(re)
	return func(_ int, b []byte) []byte {
		done := false
		return r.ReplaceAllFunc(b, func(m []byte) []byte {
			if done {
				return m
			}
			done = true
			return r.ReplaceAll(m, []byte(repl))
		})
	}
}

// A checkpoint that verifies but names what the tape does not have is
// refused before a replay from it starts: a stop of no kind a
// checkpoint is taken at (the replay waited for it forever), tape
// events past the tape's end (the replay skipped the whole tape and
// exited 0, having checked nothing after the checkpoint).
func TestForgedCheckpointsAreRefused(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tp := filepath.Join(dir, "p.tape")
	r := runCLI(t, nil, "record", "--checkpoint-every", "100ms", "-o", tp, "periodic", "count=20")
	require.Equal(t, 0, r.code, r.stderr)
	ck, err := os.ReadFile(tp + ".ckpt")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		edit func(int, []byte) []byte
		want string
	}{
		{"stop kind", replace(`"LastStop":\d+`, `"LastStop":99`), "stop of kind"},
		{"events applied", func(i int, b []byte) []byte {
			b = replace(`^\{"Time":(\d+),"Events":\d+`, `{"Time":$1,"Events":4611686018427387904`)(i, b)
			return replace(`"Applied":\d+`, `"Applied":4611686018427387904`)(i, b)
		}, "past the tape's end"},
		{"last event", replace(`("Last":\{"Exit":\d+,"Branch":)\d+`, `${1}12345`), "its last event was at"},
		// RAM restored is checked against what the capture hashed: its
		// xxHash64, or, in a file written before checkpoints kept one, its
		// SHA-256.
		{"RAM sum", replace(`"RAMSum":\d+`, `"RAMSum":1`), "its RAM does not hash to its recorded xxHash64"},
		{"RAM hash, no sum", func(i int, b []byte) []byte {
			b = replace(`"RAMSum":\d+`, `"RAMSum":0`)(i, b)
			first := regexp.MustCompile(`"RAMHash":\[(\d+)`).FindSubmatch(b)
			n, _ := strconv.Atoi(string(first[1]))
			return replace(`"RAMHash":\[\d+`, fmt.Sprintf(`"RAMHash":[%d`, (n+1)%256))(i, b)
		}, "its RAM does not hash to its recorded SHA-256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(tp+".ckpt", ck, 0o644))
			forgeCheckpoints(t, tp+".ckpt", tc.edit)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, reprise, "replay", "-q", "--from", "5s", tp)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			require.NoError(t, ctx.Err(), "the replay from a forged checkpoint never ended")
			require.Error(t, err, "a replay from a forged checkpoint: %s", stderr.String())
			require.Contains(t, stderr.String(), tc.want)
		})
	}
}

// A tape whose checkpoint file is damaged still replays — from boot,
// checking the whole checkpoints before the damage, from one of them, or
// split at them — and says what it ignored; one whose file has no whole
// HEAD replays from boot without it.
func TestDamagedCheckpointFileIsIgnored(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tp := filepath.Join(dir, "p.tape")
	r := runCLI(t, nil, "record", "--checkpoint-every", "100ms", "-o", tp, "periodic", "count=20")
	require.Equal(t, 0, r.code, r.stderr)
	full := r.stdout
	ck, err := os.ReadFile(tp + ".ckpt")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tp+".ckpt", ck[:len(ck)-3], 0o644)) // cut inside its last frame

	r = runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, full, r.stdout)
	require.Regexp(t, `warning: checkpoint file .*: at byte \d+: the file ends inside .*ignoring it`, r.stderr)
	require.Contains(t, r.stderr, "replay matched")

	r = runCLI(t, nil, "replay", "--from", "5s", tp)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `starting at checkpoint [1-9]`, r.stderr)
	require.True(t, strings.HasSuffix(full, r.stdout))

	r = runCLI(t, nil, "replay", "-q", "--jobs", "2", "--db", filepath.Join(dir, "db"), tp)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `run 1 in .*: \d+ events\n`, r.stderr)

	require.NoError(t, os.WriteFile(tp+".ckpt", ck[:30], 0o644)) // not even its HEAD
	r = runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, full, r.stdout)
	require.Contains(t, r.stderr, "replaying without its checkpoints")
}

// The checkpoints of a program that made directories and moved, grew and
// shrank mappings with mremap restore: a replay from each, a split
// replay and its shares merged all match. (Every one was refused: "file
// 20 (inode 21) is not one of the program's".)
func TestCheckpointsOfDirectoriesAndMremapRestore(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "musl-gcc")
	dir := t.TempDir()
	bin := filepath.Join(dir, "dirremap")
	out, err := exec.Command("musl-gcc", "-static", "-O1", "-o", bin, filepath.Join("testdata", "dirremap.c")).CombinedOutput()
	require.NoError(t, err, string(out))
	tp := filepath.Join(dir, "d.tape")
	r := runCLI(t, nil, "record", "--mem", "64M", "--checkpoint-every", "10ms", "-o", tp, "--", bin)
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^sum \d+ size 65536\n$`, r.stdout)
	require.Regexp(t, `wrote ([4-9]|\d\d+) checkpoints`, r.stderr)
	full := r.stdout
	starts := map[string]bool{}
	for _, from := range []string{"20ms", "60ms", "120ms", "200ms", "400ms", "1h"} {
		r := runCLI(t, nil, "replay", "--from", from, tp)
		require.Equal(t, 0, r.code, "--from %s: %s", from, r.stderr)
		require.Contains(t, r.stderr, "replay matched", from)
		// What the program printed from there on: its one line, or nothing
		// from a checkpoint taken between its last write and its exit (a
		// loaded host's timing puts one there).
		require.True(t, strings.HasSuffix(full, r.stdout), "--from %s: %q is not the end of %q", from, r.stdout, full)
		if m := regexp.MustCompile(`starting at checkpoint \d+`).FindString(r.stderr); m != "" {
			starts[m] = true
		}
	}
	require.GreaterOrEqual(t, len(starts), 3, "replays from different checkpoints")
	db := func(name string) string { return filepath.Join(dir, name) }
	for _, args := range [][]string{
		{"--jobs", "2", "--db", db("par")},
		{"--segment", "1/2", "--db", db("s1")},
		{"--segment", "2/2", "--db", db("s2")},
	} {
		r := runCLI(t, nil, append(append([]string{"replay", "-q"}, args...), tp)...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
	}
	r = runCLI(t, nil, "merge", "-o", db("merged"), db("s1"), db("s2"))
	require.Equal(t, 0, r.code, r.stderr)
}

// A recording with --checkpoint-every of a program holding more written
// files than a checkpoint holds goes on to the end without the
// checkpoints it cannot take, and says so; the recording replays. (It
// ended with exit 125 at the first, the rest of the run lost.)
func TestOversizedCheckpointIsSkipped(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "musl-gcc")
	dir := t.TempDir()
	bin := filepath.Join(dir, "bigstate")
	out, err := exec.Command("musl-gcc", "-static", "-O1", "-o", bin, filepath.Join("testdata", "bigstate.c")).CombinedOutput()
	require.NoError(t, err, string(out))
	tp := filepath.Join(dir, "b.tape")
	r := runCLI(t, nil, "record", "--mem", "64M", "--checkpoint-every", "500ms", "-o", tp, "--", bin, "files", "68")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^sum \d+\n$`, r.stdout)
	require.Regexp(t, `warning: no checkpoint at record time [\d.]+m?s: the machine's state compresses to \d+ bytes, more than a frame holds`, r.stderr)
	rep := runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Equal(t, r.stdout, rep.stdout)
}
