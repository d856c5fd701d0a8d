package linux_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/linux"
)

// Hostile programs that try to make reprise hold more host memory than a
// program is allowed (testdata/budget.c, one way per argument). Each runs
// under `reprise run` in a subprocess whose address space is bounded
// (prlimit --as), so a regression fails the test instead of taking the
// host's memory, and its peak resident set is held to the bound
// linux.HostMemoryBound states.

// hostileRAM is the guest RAM most hostile programs get: the bound is on
// what reprise holds besides it. Those that fork a lot get forkRAM.
const (
	hostileRAM = 64 << 20
	forkRAM    = 256 << 20
)

// hostileAS is the subprocess's address-space limit: the stated bound, with
// room for the Go runtime's and KVM's reservations, which are address space
// but not memory.
const hostileAS = 6 << 30

type hostileResult struct {
	ram      int64 // the guest RAM it ran with
	code     int
	out, err string
	peak     int64 // bytes: the subprocess's peak resident set
	took     time.Duration
}

// hostileProgram builds reprise and budget.c, once per test.
func hostileProgram(t *testing.T) (reprise, prog string) {
	t.Helper()
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "musl-gcc", "prlimit", "go")
	reprise = filepath.Join(t.TempDir(), "reprise")
	out, err := exec.Command("go", "build", "-o", reprise, "../cmd/reprise").CombinedOutput()
	require.NoError(t, err, "building reprise: %s", out)
	return reprise, build(t, "musl-gcc", "budget.c", "-static", "-O2")
}

// runHostile runs prog with args under reprise, bounded, and reports how
// it ended and what it took.
func runHostile(t *testing.T, reprise, prog string, ram int64, args ...string) hostileResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	argv := append([]string{"--as=" + strconv.Itoa(hostileAS), reprise, "run", "--mem", strconv.FormatInt(ram>>20, 10) + "M", "--", prog}, args...)
	cmd := exec.CommandContext(ctx, "prlimit", argv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := hostileResult{ram: ram, out: out.String(), err: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		require.NoError(t, err)
	}
	r.code = cmd.ProcessState.ExitCode()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.peak = ru.Maxrss << 10
	}
	t.Logf("%v: exit %d, peak %d MiB, %v\n%s%s", args, r.code, r.peak>>20, r.took.Round(time.Millisecond), r.out, lastLines(r.err, 5))
	return r
}

// lastLines is the end of s, a few lines.
func lastLines(s string, n int) string {
	b := []byte(s)
	for i := len(b) - 2; i >= 0; i-- {
		if b[i] == '\n' {
			if n--; n == 0 {
				return string(b[i+1:])
			}
		}
	}
	return s
}

// requireBounded checks a run ended by the program (its own exit
// status, not reprise's failure) within the stated host-memory bound.
func requireBounded(t *testing.T, r hostileResult, status int) {
	t.Helper()
	require.Equal(t, status, r.code, "exit status; stderr: %s", lastLines(r.err, 5))
	bound := linux.HostMemoryBound(r.ram, linux.MaxHeldBytes)
	require.LessOrEqual(t, r.peak, bound, "peak resident set %d MiB, bound %d MiB", r.peak>>20, bound>>20)
}

// A file truncated while mappings of it remain holds only its new
// contents, as on Linux: rewriting a 64 MiB file 48 times (3 GiB in all),
// a page of each generation kept mapped, holds what one generation takes,
// within the bound's multiple of it; so does unmapping each generation
// first.
func TestHostileTruncatedMappedFiles(t *testing.T) {
	reprise, prog := hostileProgram(t)
	for _, way := range []string{"trunc", "rewrite"} {
		r := runHostile(t, reprise, prog, hostileRAM, way, "64", "48")
		requireBounded(t, r, 0)
		require.Equal(t, way+" rounds: 48\n", r.out)
		requireWithin(t, r, 64<<20)
	}
}

// requireWithin checks a run's peak against the bound's multiple of what
// the program holds, held bytes of files or pipes, rather than of all it
// may hold.
func requireWithin(t *testing.T, r hostileResult, held int64) {
	t.Helper()
	bound := linux.HostMemoryBound(r.ram, held)
	require.LessOrEqual(t, r.peak, bound, "peak resident set %d MiB holding %d MiB, bound %d MiB", r.peak>>20, held>>20, bound>>20)
}

// The file budget itself holds: 64 MiB files until ENOSPC, at 1 GiB.
func TestHostileFileBudget(t *testing.T) {
	reprise, prog := hostileProgram(t)
	r := runHostile(t, reprise, prog, hostileRAM, "files")
	requireBounded(t, r, 0)
	require.Regexp(t, `^file bytes: 10[0-9]{8}, then No space left on device\n$`, r.out)
}

// Pipe buffers are bounded across all the program's processes, as
// Linux's pipe-user-pages limits bound a user's: 255 children each
// filling pipes until pipe fails, small pipes past the soft limit, ENFILE
// at the hard one.
func TestHostilePipes(t *testing.T) {
	reprise, prog := hostileProgram(t)
	r := runHostile(t, reprise, prog, hostileRAM, "pipes", "255")
	requireBounded(t, r, 0)
	requireWithin(t, r, 256<<20)
	// 1 024 pipes of 64 KiB to the soft limit, 24 576 of 8 KiB to the
	// hard one, the parent's report pipe among the first.
	require.Equal(t, "pipes: 25599 holding 268369920 bytes, last error Too many open files in system, 0 unexpected\n", r.out)
}

// Directories are nodes of the file system, bounded: mkdir side by side
// and in a chain ends in ENOSPC, at the 65 536 nodes less those the
// kernel's own directories and the host's names looked up hold.
func TestHostileDirectories(t *testing.T) {
	reprise, prog := hostileProgram(t)
	r := runHostile(t, reprise, prog, hostileRAM, "dirs")
	requireBounded(t, r, 0)
	requireWithin(t, r, 0)
	require.Regexp(t, `^dirs: 65[45][0-9][0-9], then No space left on device\ndepth: 20[0-9][0-9], then Filename too long\n$`, r.out)
}

// Orphans are reparented to the program's first process, or to their
// nearest subreaper, and reaped when it waits; children of a process that ignores SIGCHLD are reaped as
// they exit; fork fails with EAGAIN at the process bound, zombies
// included.
func TestHostileOrphans(t *testing.T) {
	reprise, prog := hostileProgram(t)
	r := runHostile(t, reprise, prog, forkRAM, "zombies", "500")
	requireBounded(t, r, 0)
	requireWithin(t, r, 0)
	require.Equal(t, "orphans: 500, reaped 1000\n", r.out)
	r = runHostile(t, reprise, prog, forkRAM, "subreaper", "100")
	requireBounded(t, r, 0)
	require.Equal(t, "subreaper: exit 0, the first process reaped 1\n", r.out)
	r = runHostile(t, reprise, prog, forkRAM, "ignored", "600")
	requireBounded(t, r, 0)
	require.Equal(t, "ignored children: 600, then No child process\n", r.out)
	r = runHostile(t, reprise, prog, forkRAM, "forks")
	requireBounded(t, r, 0)
	require.Equal(t, "children: 255, then Resource temporarily unavailable; RLIMIT_NPROC 256\n", r.out)
}

// A file grown by writes past its end holds no more than its size.
func TestHostileSparseFile(t *testing.T) {
	reprise, prog := hostileProgram(t)
	r := runHostile(t, reprise, prog, hostileRAM, "sparse")
	requireBounded(t, r, 0)
	require.Regexp(t, `^sparse bytes: 10[0-9]{8}, then No space left on device\n$`, r.out)
}

// What is counted rather than sized stays within HostOverhead: 128
// children each holding every descriptor it may (half a million open
// files; 255 children, a million, measured 553 MiB with 256 MiB of RAM,
// take a minute and a half).
func TestHostileDescriptors(t *testing.T) {
	reprise, prog := hostileProgram(t)
	r := runHostile(t, reprise, prog, forkRAM, "descriptors", "128")
	requireBounded(t, r, 0)
	requireWithin(t, r, 0)
	require.Equal(t, "descriptors: 523648, 0 unexpected\n", r.out)
}

// A removed file's space comes back when it is no longer open, not
// before: 32 temporary files of 64 MiB written and removed in turn fit in
// 1 GiB; a removed file still open keeps its space until it is closed.
func TestHostileRemovedFiles(t *testing.T) {
	reprise, prog := hostileProgram(t)
	r := runHostile(t, reprise, prog, hostileRAM, "removed")
	requireBounded(t, r, 0)
	require.Equal(t, "temporary files: 32; removed, open: No space left on device; closed: No error information\n", r.out)
}
