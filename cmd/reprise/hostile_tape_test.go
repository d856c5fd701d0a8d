package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/reprise-vm/reprise/tape"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
	// The checkpoint file is damaged from there on: a plain replay says
	// it ignores it and replays from boot; the message stays short.
	r = runCLI(t, nil, "replay", "-q", tp)
	require.Equal(t, 0, r.code, "%.2000s", r.stderr)
	require.Contains(t, r.stderr, "field Digest: ignoring it")
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
// remove its scratch directory (the segments' spools; the disk
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

// forgeFacts rewrites the file events of the tape at tp: edit changes
// each file fact in place; the tape is written anew, valid but for what
// edit forged, and returned. A forgery the writer refuses is returned as
// an error.
func forgeFacts(t *testing.T, tp string, edit func(i int, f *tape.FileFact)) ([]byte, error) {
	return multiplyFacts(t, tp, func(i int, f *tape.FileFact) []*tape.FileFact { edit(i, f); return []*tape.FileFact{f} })
}

// multiplyFacts is forgeFacts with each file event replaced by one event
// for each fact edit returns, at the same position.
func multiplyFacts(t *testing.T, tp string, edit func(i int, f *tape.FileFact) []*tape.FileFact) ([]byte, error) {
	t.Helper()
	r, err := tape.Open(tp)
	require.NoError(t, err)
	defer r.Close()
	var out bytes.Buffer
	w, err := tape.NewWriter(&out, r.Header())
	require.NoError(t, err)
	for i := 0; ; {
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		events := []*tape.Event{e}
		if e.Fact != nil {
			events = nil
			for _, f := range edit(i, e.Fact) {
				c := *e
				c.Fact = f
				events = append(events, &c)
			}
			i++
		}
		for _, e := range events {
			if err := w.Append(e); err != nil {
				return nil, err
			}
		}
	}
	require.NoError(t, w.Close())
	return out.Bytes(), nil
}

// A tape names the files its program read by content, and a replay reads
// a host file only if it is that content: a forged tape naming a /proc
// file, a device or another file of the right size is refused before its
// bytes reach the guest, and a zero hash cannot be written. A replay says
// which host files it reads.
func TestForgedTapeReadsNoHostFile(t *testing.T) {
	bb := busybox(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	require.NoError(t, os.WriteFile(in, []byte("hello file\n"), 0o644))
	tp := filepath.Join(dir, "cat.tape")
	r := runCLI(t, nil, "record", "-o", tp, "--", bb, "cat", in)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "hello file\n", r.stdout)
	r = runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, `reprise: replay reads 1 host files the tape names, each only if it is a regular file of the recorded size and SHA-256: "`+in+`"`)

	secret := filepath.Join(dir, "shadow")
	require.NoError(t, os.WriteFile(secret, []byte("TOP-SECRET\n"), 0o600)) // 11 bytes, as in.txt
	const envSecret = "env-secret-4711"
	_, err := forgeFacts(t, tp, func(_ int, f *tape.FileFact) {
		if f.Op == tape.FileRead {
			f.SHA256 = [32]byte{}
		}
	})
	require.ErrorContains(t, err, "SHA-256", "a zero hash cannot be written")
	// A forged tape cannot make a replay read another file: the question
	// is the program's, and a tape that answers another is a divergence.
	raw, err := forgeFacts(t, tp, func(_ int, f *tape.FileFact) {
		if f.Op == tape.FileRead && f.Path == in {
			f.Path = secret
		}
	})
	require.NoError(t, err)
	forged := filepath.Join(t.TempDir(), "forged.tape")
	require.NoError(t, os.WriteFile(forged, raw, 0o644))
	r = runCLI(t, nil, "replay", forged)
	require.Equal(t, exitDivergence, r.code, r.stderr)
	require.Contains(t, r.stderr, "the program asked the host to read "+in)
	require.NotContains(t, r.stdout+r.stderr, "TOP-SECRET")

	// The file the program read, replaced on the host by a /proc file,
	// a device or another file of its size: refused before its bytes
	// reach the guest.
	for _, tc := range []struct{ name, target, want string }{
		{"environ", "/proc/self/environ", in + " is on procfs"},
		{"a secret of the same size", secret, in + " is not the file the program read when recorded"},
		{"a device", "/dev/zero", in + ", which the program read when recorded, is not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.Remove(in))
			require.NoError(t, os.Symlink(tc.target, in))
			t.Cleanup(func() {
				os.Remove(in)
				os.WriteFile(in, []byte("hello file\n"), 0o644)
			})
			r := runCLI(t, []string{"REPRISE_TEST_SECRET=" + envSecret}, "replay", tp)
			require.Equal(t, exitFailure, r.code, "stdout %q, stderr %s", r.stdout, r.stderr)
			require.Contains(t, r.stderr, tc.want)
			require.NotContains(t, r.stdout+r.stderr, envSecret)
			require.NotContains(t, r.stdout+r.stderr, "TOP-SECRET")
			require.NotContains(t, r.stderr, "replay matched")
		})
	}
}

// A file's mode is the tape's, not the replaying host's: a packed tape
// whose program execs a --file binary failed (EACCES) where the file is
// missing, or not executable, on the replaying machine.
func TestReplayTakesModesFromTheTape(t *testing.T) {
	bb := busybox(t)
	dir := t.TempDir()
	tool := filepath.Join(dir, "tool")
	exe, err := os.ReadFile(bb)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(tool, exe, 0o755))
	packed, plain := filepath.Join(dir, "packed.tape"), filepath.Join(dir, "plain.tape")
	for _, tp := range []string{packed, plain} {
		args := []string{"record", "-o", tp, "--file", tool + ":/data/echo"}
		if tp == packed {
			args = append(args, "--pack")
		}
		r := runCLI(t, nil, append(args, "--", bb, "sh", "-c", "/data/echo the tool ran")...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, "the tool ran\n", r.stdout)
	}

	require.NoError(t, os.Chmod(tool, 0o644)) // the same bytes, not executable here
	r := runCLI(t, nil, "replay", plain)
	require.Equal(t, 0, r.code, "stdout %q, stderr %s", r.stdout, r.stderr)
	require.Equal(t, "the tool ran\n", r.stdout)

	require.NoError(t, os.Remove(tool)) // another machine
	r = runCLI(t, nil, "replay", packed)
	require.Equal(t, 0, r.code, "stdout %q, stderr %s", r.stdout, r.stderr)
	require.Equal(t, "the tool ran\n", r.stdout)
}

// packBounded runs reprise pack under an address-space limit, so that a
// regression fails rather than takes the host's memory, and returns its
// result and peak RSS in bytes. The limit is 3 GiB: the Go runtime
// reserves about 1.6 GB of address space for a pack that holds 60 MB.
func packBounded(t *testing.T, tp, out string) (cliResult, int64) {
	t.Helper()
	kvmtest.RequireTools(t, "prlimit")
	cmd := exec.Command("prlimit", fmt.Sprintf("--as=%d", 3<<30), "--", reprise, "pack", tp, "-o", out)
	r := runCmd(t, cmd)
	return r, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
}

// reprise pack checks each file before holding it, reads a content once
// however often the tape names it, and reads nothing when the files
// cannot fit in a tape: a forged tape naming a 31 MB file 200 times had
// every copy read (OOM-killed at 3 GB) before any hash was checked.
func TestPackIsBounded(t *testing.T) {
	bb := busybox(t)
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(big, bytes.Repeat([]byte("31 MB of a file named many times\n"), 31<<20/33), 0o644))
	tp := filepath.Join(dir, "t.tape")
	r := runCLI(t, nil, "record", "-o", tp, "--", bb, "sh", "-c", "cat "+big+" >/dev/null")
	require.Equal(t, 0, r.code, r.stderr)
	// The tape's read of the file, forged into reads of n files of its
	// content: the file itself, and n-1 others.
	copies := func(n int) string {
		p := filepath.Join(dir, fmt.Sprintf("x%d.tape", n))
		raw, err := multiplyFacts(t, tp, func(_ int, f *tape.FileFact) []*tape.FileFact {
			if f.Op != tape.FileRead || f.Path != big {
				return []*tape.FileFact{f}
			}
			out := []*tape.FileFact{f}
			for i := 1; i < n; i++ {
				c := *f
				c.Path = fmt.Sprintf("%s%d", big, i)
				out = append(out, &c)
			}
			return out
		})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, raw, 0o644))
		return p
	}

	// A child's peak RSS starts at this process's when it forks: measure
	// that floor with a pack that reads no tape.
	_, floor := packBounded(t, filepath.Join(dir, "missing.tape"), filepath.Join(dir, "none"))
	out := filepath.Join(dir, "x200.packed")
	r, rss := packBounded(t, copies(200), out)
	t.Logf("200 copies: exit %d, peak RSS %d MiB (floor %d MiB)", r.code, rss>>20, floor>>20)
	require.Equal(t, exitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, "the files take more than the 1073741824 bytes a tape holds")
	require.Less(t, rss, floor+64<<20, "nothing is read")
	require.NoFileExists(t, out)

	out = filepath.Join(dir, "x8.packed")
	r, rss = packBounded(t, copies(8), out)
	t.Logf("8 copies: exit %d, peak RSS %d MiB", r.code, rss>>20)
	require.Equal(t, 0, r.code, r.stderr)
	require.Less(t, rss, floor+128<<20, "the content is held once, and written from where it is held")
	info := runCLI(t, nil, "info", out)
	require.Equal(t, 0, info.code, info.stderr)

	// A file that is not the recorded one is refused, and no tape written.
	require.NoError(t, os.WriteFile(big, []byte("not the file\n"), 0o644))
	out = filepath.Join(dir, "changed.packed")
	r, _ = packBounded(t, tp, out)
	require.Equal(t, exitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, big+" is 13 bytes, not the ")
	require.NoFileExists(t, out)
}
