package linux_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/vmm"
)

// runMM runs testdata/mm.c's bin with argv live in a guest of mem bytes
// and returns its console output, after requiring that the run ended with
// the program's own exit (no abort of the run). It logs the time taken.
func runMM(t *testing.T, bin string, mem uint64, argv ...string) (uint32, string) {
	t.Helper()
	kvmtest.Require(t)
	raw, err := os.ReadFile(bin)
	require.NoError(t, err)
	k, err := linux.New(linux.Program{Path: "/bin/mm", Image: raw, Argv: append([]string{"mm"}, argv...), Epoch: time.Unix(1700000000, 0)})
	require.NoError(t, err)
	var out bytes.Buffer
	m, err := vmm.New(vmm.Config{Kernel: k, MemBytes: mem, Console: &out})
	require.NoError(t, err)
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	res, err := m.Run(ctx)
	t.Logf("mm %v: %v in %v", argv, out.String(), time.Since(start))
	require.NoError(t, err, "mm %v: %s", argv, out.String())
	return res.Status, out.String()
}

// onHost runs bin natively with argv and returns its output.
func onHost(t *testing.T, bin string, argv ...string) string {
	t.Helper()
	out, err := exec.Command(bin, argv...).Output()
	require.NoError(t, err)
	return string(out)
}

// Loops that map and unmap, allocate and free, fork and wait run as long
// as the program likes: page-table frames a change replaced are reused
// (once KVM has dropped the shadows it kept of them), so guest RAM does
// not run out. Before, mmap+munmap of 1 MiB failed by 8 000 iterations,
// malloc+free of 200 KB at 7 862, fork+wait at 2 737 (3 000 here), each ending the
// whole run ("guest RAM exhausted").
func TestLongLoopsReuseTableFrames(t *testing.T) {
	bin := build(t, "musl-gcc", "mm.c", "-static", "-O1")
	for _, argv := range [][]string{{"mmap", "20000"}, {"malloc", "20000"}, {"fork", "3000"}} {
		t.Run(argv[0], func(t *testing.T) {
			want := onHost(t, bin, argv...)
			status, out := runMM(t, bin, 256<<20, argv...)
			require.Equal(t, want, out)
			require.Zero(t, status)
		})
	}
}

// A program that maps all of guest RAM gets ENOMEM from what needs more
// — mmap, fork — and the run goes on; a munmap that must copy page tables
// finds the frames it frees (before, it ended the run: "guest RAM
// exhausted"), and freed, the memory is there again.
func TestMemoryExhaustedIsENOMEM(t *testing.T) {
	bin := build(t, "musl-gcc", "mm.c", "-static", "-O1")
	status, out := runMM(t, bin, 128<<20, "exhaust")
	require.Equal(t, "mmap 1 MiB: Out of memory\nmmap 4 KiB: Out of memory\n"+
		"munmap inside: ok\nfork: Out of memory\nafter freeing: 32 MiB ok\n", out)
	require.Zero(t, status)
}

// vm.max_map_count: past 65 530 mappings mmap fails with ENOMEM, and so
// does a munmap that would split one, as on the host; with fewer, the
// split is made. The count the host reaches differs by the few mappings
// it has that the personality does not (vdso, vvar).
func TestMapCountLimit(t *testing.T) {
	bin := build(t, "musl-gcc", "mm.c", "-static", "-O1")
	want := onHost(t, bin, "maps")
	status, out := runMM(t, bin, 256<<20, "maps")
	require.Zero(t, status)
	count := regexp.MustCompile(`^mappings (\d+), then Out of memory\n`)
	got, host := count.FindStringSubmatch(out), count.FindStringSubmatch(want)
	require.NotNil(t, got, out)
	require.NotNil(t, host, want)
	n, _ := strconv.Atoi(got[1])
	require.InDelta(t, 65530, n, 20, "mappings made before ENOMEM")
	require.Equal(t, want[len(host[0]):], out[len(got[0]):])
}

// mremap does not grow a mapping at the top of user space past it; moved,
// the mapping lands below the top with its contents. The host says the
// same where its user space ends where the personality's does, below 128
// TiB (four-level paging). On a host with five levels (la57: the nested
// VMs .ci/run tests in) user space goes on, and the mapping grows there;
// the answer is then a four-level host's (Linux 6.18's).
func TestMremapPastTop(t *testing.T) {
	bin := build(t, "musl-gcc", "mm.c", "-static", "-O1")
	want := "mremap in place past the top: Out of memory\n" +
		"mremap 64 TiB in place: Out of memory\n" +
		"mremap 128 TiB moving: Invalid argument\n"
	if !fiveLevelHost(t) {
		want = onHost(t, bin, "top")
	}
	_, out := runMM(t, bin, 256<<20, "top")
	require.Equal(t, want, out)
}

// fiveLevelHost says whether the host gives user space more than 47 bits
// of address (five-level paging): whether it maps at a hint above them.
func fiveLevelHost(t *testing.T) bool {
	t.Helper()
	const hint = 1 << 50
	addr, _, errno := unix.Syscall6(unix.SYS_MMAP, hint, 4096, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
	require.Zero(t, errno, "mmap of a page")
	_, _, errno = unix.Syscall(unix.SYS_MUNMAP, addr, 4096, 0)
	require.Zero(t, errno, "munmap")
	return addr >= 1<<47
}

// mremap moves a PROT_NONE mapping with its contents (its frames), as
// the host does; before, the copy faulted and ended the run.
func TestMremapProtNone(t *testing.T) {
	bin := build(t, "musl-gcc", "mm.c", "-static", "-O1")
	want := onHost(t, bin, "none")
	_, out := runMM(t, bin, 256<<20, "none")
	require.Equal(t, want, out)
}

// Reusing table frames keeps replay exact: the frames a change takes
// depend on the system calls alone, whenever KVM's shadows are dropped.
func TestTableFrameReuseReplays(t *testing.T) {
	bin := build(t, "musl-gcc", "mm.c", "-static", "-O1")
	for _, argv := range [][]string{{"mm", "mmap", "3000"}, {"mm", "fork", "300"}} {
		p := program(t, bin, argv...)
		path, rec, console := recordProgram(t, p, time.Millisecond)
		require.Equal(t, onHost(t, bin, argv[1:]...), console)
		replaysMatch(t, path, rec, console, 1)
	}
}

// A checkpoint holds the frames waiting for KVM to drop its shadows: a
// replay from a checkpoint in the middle of a loop that retires tables
// takes the frames the recording took, to the same RAM at the end.
func TestTableFrameReuseCheckpoints(t *testing.T) {
	kvmtest.Require(t)
	bin := build(t, "musl-gcc", "mm.c", "-static", "-O1")
	dir := t.TempDir()
	path, ck := filepath.Join(dir, "mm.tape"), filepath.Join(dir, "mm.ckpt")
	var console bytes.Buffer
	// A loaded host stretches the loop past a minute, and a recording cut
	// short by its deadline prints nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec, err := recorder.Record(ctx, recorder.Options{Linux: program(t, bin, "mm", "mmap", "3000"), MemBytes: 256 << 20,
		Output: path, Console: &console, Host: recorder.HostOff, CheckpointEvery: 100 * time.Millisecond, Checkpoints: ck})
	require.NoError(t, err, console.String())
	require.Equal(t, "mmap+munmap 3000 ok\n", console.String())
	n := len(rec.Checkpoints)
	require.GreaterOrEqual(t, n, 3, "checkpoints taken while recording")
	for _, i := range slices.Compact([]int{1, n / 2, n - 1}) {
		var part bytes.Buffer
		res, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &part, Checkpoints: ck, Start: i})
		require.NoError(t, err, "from checkpoint %d of %d", i, n)
		require.Equal(t, rec.End.RAMHash, res.End.RAMHash, "from checkpoint %d of %d", i, n)
		require.Equal(t, console.String(), part.String(), "from checkpoint %d of %d", i, n)
	}
}
