package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// Sizes, rates and durations out of range are refused where the flag is
// parsed, naming the flag and the limit, before anything is allocated:
// `--mem 4098M` once mapped and touched 4.2 GB for 31 s before failing.
func TestFlagBounds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--mem", "4098M", "hello"}, `invalid argument "4098M" for "--mem" flag: guest RAM of 4098 MiB is too large: the limit is 4 GiB`},
		{[]string{"run", "--mem", "32G", "hello"}, "guest RAM of 32 GiB is too large"},
		{[]string{"record", "-o", "x.tape", "--mem", "4M", "hello"}, "guest RAM of 4 MiB is too small"},
		{[]string{"run", "--mem", "65M", "hello"}, "not a multiple of 2 MiB"},
		{[]string{"run", "--timer-hz", "-1", "hello"}, `"--timer-hz" flag: want a tick rate in Hz, from 0 (no timer) to 10000`},
		{[]string{"run", "--timer-hz", "100000000", "hello"}, "100000000 Hz is too fast"},
		{[]string{"run", "--timeout", "-1s", "hello"}, `"--timeout" flag: want a positive duration, or 0 for no limit`},
		{[]string{"record", "-o", "x.tape", "--timeout", "-1s", "hello"}, `"--timeout" flag`},
		{[]string{"record", "-o", "x.tape", "--timer-jitter", "-5ms", "hello"}, `"--timer-jitter" flag: want a duration from 1ns to 1s`},
		{[]string{"record", "-o", "x.tape", "--timer-jitter", "20ms", "hello"}, "--timer-jitter 20ms is not less than the tick period (10ms at 100 Hz)"},
		{[]string{"record", "-o", "x.tape", "--timer-hz", "0", "--timer-jitter", "1ms", "hello"}, "--timer-jitter needs a timer"},
		{[]string{"replay", "--sample-period", "-1ms", "x.tape"}, `"--sample-period" flag: want a duration from 100µs to 1h0m0s`},
		{[]string{"replay", "--sample-period", "10us", "x.tape"}, `"--sample-period" flag`},
		{[]string{"replay", "--sample", "0", "x.tape"}, `"--sample" flag: want a positive number of branch counts between samples`},
		{[]string{"lockstat", "--top", "-1", "x.db"}, `"--top" flag: want 0 or a positive number`},
		{[]string{"profile", "--top", "-5", "x.db"}, `"--top" flag`},
		{[]string{"preempt", "--entries", "-1", "x.db"}, `"--entries" flag`},
		{[]string{"preempt", "--from", "-1s", "x.db"}, `"--from" flag: want a duration of 0 or more`},
		{[]string{"events", "--limit", "-2", "--run", "1", "x.db"}, `"--limit" flag`},
		{[]string{"events", "--thread", "-5", "--run", "1", "x.db"}, `"--thread" flag: not a guest thread id`},
		{[]string{"profile", "--thread", "-7", "x.db"}, `"--thread" flag`},
		{[]string{"timeline", "--max-events", "0", "-o", "x.json", "x.db"}, `"--max-events" flag: want a positive number of slices`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			start := time.Now()
			r := runCLIIn(t, dir, tc.args...)
			require.Equal(t, exitUsage, r.code, r.stderr)
			require.Contains(t, r.stderr, tc.want)
			require.Less(t, time.Since(start), 10*time.Second, "refused before anything ran")
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, entries, "nothing was written")
		})
	}
}

// runCLIIn runs reprise in dir.
func runCLIIn(t testing.TB, dir string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(reprise, args...)
	cmd.Dir = dir
	return runCmd(t, cmd)
}

// runCmd runs cmd, a reprise however started, and returns its exit
// status and output; a failure to start it fails the test.
func runCmd(t testing.TB, cmd *exec.Cmd) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return cliResult{code, out.String(), errb.String()}
}

// A reprise flag typed after the workload would reach the guest as its
// argument; reprise says where its flags go instead of running the guest
// with them (`record syn_cont -o t.tape` used to say "record needs -o").
func TestReprisesFlagsAfterTheWorkload(t *testing.T) {
	dir := t.TempDir()
	r := runCLIIn(t, dir, "record", "syn_cont", "iters=5", "-o", "t.tape")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "-o is reprise's own flag, but it comes after the workload")
	require.Contains(t, r.stderr, "(reprise record -o t.tape syn_cont iters=5)")
	require.NoFileExists(t, filepath.Join(dir, "t.tape"))

	r = runCLIIn(t, dir, "run", "--timer-hz", "250", "hello", "--timeout=5s")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "(reprise run --timer-hz=250 --timeout=5s hello)")

	kvmtest.Require(t)
	// After --, arguments go to the guest as they are.
	r = runCLIIn(t, dir, "run", "hello", "--", "--timeout=5s")
	require.Equal(t, 0, r.code, r.stderr)
}

// A directory is never a guest image; a bare name that is both a workload
// and a file runs the workload and says how to boot the file.
func TestWorkloadOrImageNames(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "bench"), 0o755))
	r := runCLIIn(t, dir, "run", "bench", "exit-cpl0", "n=10")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "truth: mode=exit-cpl0")
	r = runCLIIn(t, dir, "run", "./bench")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "./bench is a directory, not a guest image")
	r = runCLIIn(t, dir, "run", "bench2")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, `unknown workload "bench2" and no such image file`)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello"), []byte("not an image"), 0o644))
	r = runCLIIn(t, dir, "run", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "hello is the bundled workload; to boot the file of that name, write ./hello")
	r = runCLIIn(t, dir, "run", "./hello")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "not an ELF file")

	for _, dev := range []string{"/dev/zero", "/dev/null"} {
		r = runCLIIn(t, dir, "run", dev)
		require.Equal(t, exitFailure, r.code)
		require.Contains(t, r.stderr, dev+" is a character device, not a regular file")
	}
}

// A recording never silently replaces another: -o of an existing file is
// refused (the old tape intact) unless --force; the overlay likewise.
func TestRecordNeverOverwrites(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tp := filepath.Join(dir, "run.tape")
	require.NoError(t, os.WriteFile(tp, []byte("precious"), 0o644))
	r := runCLI(t, nil, "record", "-o", tp, "hello")
	require.Equal(t, exitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, tp+" exists; a recording never overwrites one: choose another name, remove it, or add --force")
	got, err := os.ReadFile(tp)
	require.NoError(t, err)
	require.Equal(t, "precious", string(got))

	r = runCLI(t, nil, "record", "--force", "-o", tp, "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 0, runCLI(t, nil, "replay", "-q", tp).code)

	// The disk overlay beside a new tape is the old recording's too.
	base := baseImage(t, dir, 1<<16)
	other := filepath.Join(dir, "other.tape")
	require.NoError(t, os.WriteFile(other+".overlay", []byte("old overlay"), 0o644))
	r = runCLI(t, nil, "record", "--disk", base, "-o", other, "disk", "mode=read")
	require.Equal(t, exitFailure, r.code, r.stderr)
	require.Contains(t, r.stderr, other+".overlay exists")
	require.NoFileExists(t, other)
}

// A recording stopped by Ctrl-C, SIGTERM or --timeout ends cleanly with
// its end event, and its status says why, as `reprise run`'s does: 130,
// 143, 124. SIGTERM used to kill the recorder without an end event.
func TestRecordStopStatuses(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		sig    syscall.Signal
		status int
	}{
		{"sigint", unix.SIGINT, 130},
		{"sigterm", unix.SIGTERM, 143},
		{"timeout", 0, exitTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := filepath.Join(dir, tc.name+".tape")
			args := []string{"record", "-o", tp, "cpu", "digits=100000"}
			if tc.sig == 0 {
				args = []string{"record", "--timeout", "700ms", "-o", tp, "cpu", "digits=100000"}
			}
			cmd := exec.Command(reprise, args...)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			require.NoError(t, cmd.Start())
			if tc.sig != 0 {
				time.Sleep(700 * time.Millisecond)
				require.NoError(t, cmd.Process.Signal(tc.sig))
			}
			err := cmd.Wait()
			ee, ok := err.(*exec.ExitError)
			require.True(t, ok, "want an exit status, got %v", err)
			require.Equal(t, tc.status, ee.ExitCode(), errb.String())
			require.Contains(t, errb.String(), "stopped on request")
			require.Contains(t, errb.String(), "recording stopped: ")

			info := runCLI(t, nil, "info", tp)
			require.Equal(t, 0, info.code, info.stderr)
			require.Regexp(t, `damage\s+none`, info.stdout)
			require.Regexp(t, `end\s+interrupted`, info.stdout)
			rep := runCLI(t, nil, "replay", "-q", tp)
			require.Equal(t, 0, rep.code, rep.stderr)
			require.Contains(t, rep.stderr, "stopped where the recording was stopped")
		})
	}
}

// forgeHeader rewrites a tape's header JSON with edit and fixes its
// checksums, as a hostile tape would: the damage is in what the header
// says, not in its bytes.
func forgeHeader(t *testing.T, raw []byte, edit func(h map[string]any)) []byte {
	const prefix, frame = 16, 20
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	require.Equal(t, "HEAD", string(raw[prefix:prefix+4]))
	n := binary.LittleEndian.Uint32(raw[prefix+4:])
	body := raw[prefix+frame : prefix+frame+int(n)]
	var h map[string]any
	require.NoError(t, json.Unmarshal(body, &h))
	edit(h)
	nb, err := json.Marshal(h)
	require.NoError(t, err)
	hdr := make([]byte, frame)
	copy(hdr, "HEAD")
	binary.LittleEndian.PutUint32(hdr[4:], uint32(len(nb)))
	binary.LittleEndian.PutUint32(hdr[12:], crc32.Checksum(nb, castagnoli))
	binary.LittleEndian.PutUint32(hdr[16:], crc32.Checksum(hdr[:16], castagnoli))
	out := append(append(append([]byte(nil), raw[:prefix]...), hdr...), nb...)
	return append(out, raw[prefix+frame+int(n):]...)
}

// One exit status per meaning for info and replay: 4 for a damaged tape,
// wherever the damage is (a corrupt or cut header, a corrupt chunk, a
// header that forges impossible values), 0 for a tape cut inside a chunk
// by a killed recorder, 125 for a file that cannot be read. An empty CPUID
// table with valid checksums used to panic the replayer.
func TestTapeDamageStatuses(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	tp := filepath.Join(dir, "run.tape")
	require.Equal(t, 0, runCLI(t, nil, "record", "-o", tp, "syn_cont", "iters=100", "work=8000").code)
	raw, err := os.ReadFile(tp)
	require.NoError(t, err)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	flip := func(off int) []byte {
		b := bytes.Clone(raw)
		b[off] ^= 0xff
		return b
	}
	for _, tc := range []struct {
		name, path string
		info       int
		replay     int
		want       string
	}{
		{"corrupt header", write("h.tape", flip(40)), exitDamaged, exitDamaged, "corrupt at byte 16 (header)"},
		{"cut header", write("ch.tape", raw[:30]), exitDamaged, exitDamaged, "ends inside the header block"},
		{"corrupt chunk", write("c.tape", flip(len(raw)-10)), exitDamaged, exitDamaged, "corrupt at byte"},
		{"empty cpuid", write("cpuid.tape", forgeHeader(t, raw, func(h map[string]any) { h["cpuid"] = []any{} })), exitDamaged, exitDamaged, "empty CPUID table"},
		{"4 TiB of RAM", write("ram.tape", forgeHeader(t, raw, func(h map[string]any) { h["mem_bytes"] = 1 << 42 })), exitDamaged, exitDamaged, "guest RAM of 4096 GiB is too large"},
		{"missing", filepath.Join(dir, "missing.tape"), exitFailure, exitFailure, "no such file"},
		{"not a tape", "/etc/passwd", exitFailure, exitFailure, "not a reprise tape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := runCLI(t, nil, "info", tc.path)
			require.Equal(t, tc.info, info.code, "info: %s%s", info.stdout, info.stderr)
			require.Contains(t, info.stdout+info.stderr, tc.want)
			rep := runCLI(t, nil, "replay", "-q", tc.path)
			require.Equal(t, tc.replay, rep.code, "replay: %s", rep.stderr)
			require.Contains(t, rep.stderr, tc.want)
			require.NotContains(t, rep.stderr, "panic")
		})
	}

	// A recorder killed mid-chunk leaves a tape that replays up to the cut.
	cut := write("cut.tape", raw[:len(raw)-5])
	info := runCLI(t, nil, "info", cut)
	require.Equal(t, 0, info.code, info.stderr)
	require.Contains(t, info.stdout, "truncated at byte")
}

// A disk base image that is not a regular file is refused at once: a FIFO
// used to hang the replay while it was hashed.
func TestDiskBaseMustBeARegularFile(t *testing.T) {
	kvmtest.Require(t)
	dir := t.TempDir()
	base := baseImage(t, dir, 1<<16)
	tp := filepath.Join(dir, "disk.tape")
	require.Equal(t, 0, runCLI(t, nil, "record", "--disk", base, "-o", tp, "disk", "mode=read").code)
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	for _, args := range [][]string{
		{"replay", "-q", "--disk", fifo, tp},
		{"replay", "-q", "--disk", "/dev/zero", tp},
		{"run", "--disk", fifo, "disk", "mode=read"},
		{"record", "--disk", "/dev/zero", "-o", filepath.Join(dir, "z.tape"), "disk"},
	} {
		start := time.Now()
		r := runCLI(t, nil, args...)
		require.Equal(t, exitFailure, r.code, "%v: %s", args, r.stderr)
		require.Contains(t, r.stderr, "not a regular file", args)
		require.Less(t, time.Since(start), 20*time.Second, args)
	}
}

// --gdb-listen refuses what a debugged replay does not take before it
// opens anything, so it says nothing else first (it used to print the
// checkpoint a --from would start at, then refuse).
func TestGDBListenRefusesFlagsFirst(t *testing.T) {
	for _, flags := range [][]string{{"--from", "1s"}, {"--checkpoint-every", "1s"}, {"--db", "db"}, {"--locks"}, {"--sample-period", "1ms"}} {
		r := runCLI(t, nil, append(append([]string{"replay", "--gdb-listen", "127.0.0.1:0"}, flags...), "no-such.tape")...)
		require.Equal(t, exitUsage, r.code, "%v: %s", flags, r.stderr)
		require.Equal(t, "reprise: --gdb-listen debugs a replay from boot: it takes no probes, sampling, --db, --from or --checkpoint-every\n", r.stderr, flags)
	}
}
