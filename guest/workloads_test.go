package guest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/vmm"
)

type boot struct {
	out    string
	truths []guest.Truth
	res    *vmm.Result
	err    error
}

func kit(t *testing.T) *guest.Kit {
	t.Helper()
	kvmtest.Require(t)
	k, err := guest.Build(context.Background())
	require.NoError(t, err)
	return k
}

func run(t *testing.T, image, cmdline string) boot {
	t.Helper()
	return runWithDisk(t, image, cmdline, nil)
}

// runWithDisk boots with disk attached (nil: none).
func runWithDisk(t *testing.T, image, cmdline string, disk *vmm.DiskConfig) boot {
	t.Helper()
	img, err := elffile.OpenImage(image)
	require.NoError(t, err)
	var out bytes.Buffer
	m, err := vmm.New(vmm.Config{Image: img, Cmdline: cmdline, Console: &out, Disk: disk})
	require.NoError(t, err)
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := m.Run(ctx)
	return boot{out: out.String(), truths: guest.ParseTruth(out.String()), res: res, err: err}
}

func num(t *testing.T, tr guest.Truth, k string) uint64 {
	t.Helper()
	v, ok := tr[k]
	require.True(t, ok, "truth line %v has no %q", tr, k)
	n, err := strconv.ParseUint(v, 0, 64)
	require.NoError(t, err, "%s=%s", k, v)
	return n
}

// Every workload that is meant to succeed boots, exits 0 and reports
// result=ok; the per-workload checks below then hold it to its numbers.
func TestEveryWorkloadSucceeds(t *testing.T) {
	k := kit(t)
	args := map[string]string{"bench": "bench syscall n=100"}
	for _, w := range guest.Workloads() {
		if w.Name == "crash" || w.Name == "udp" { // udp needs senders: replayer/net_test.go
			continue
		}
		t.Run(w.Name, func(t *testing.T) {
			cmd := args[w.Name]
			if cmd == "" {
				cmd = w.Name
			}
			var disk *vmm.DiskConfig
			if w.Name == "disk" { // without a disk it fails on purpose (TestDiskWorkload)
				disk = scratchDisk(t)
			}
			b := runWithDisk(t, k.Image(), cmd, disk)
			require.NoError(t, b.err, b.out)
			require.Equal(t, uint32(0), b.res.Status, b.out)
			r := guest.Result(b.truths)
			require.NotNil(t, r, "no result line in:\n%s", b.out)
			require.Equal(t, "ok", r["result"], b.out)
		})
	}
}

func TestCPUComputesPi(t *testing.T) {
	k := kit(t)
	b := run(t, k.Image(), "cpu digits=3000")
	require.NoError(t, b.err)
	d := guest.Select(b.truths, "digits", "3000")
	require.Len(t, d, 1, b.out)
	require.Equal(t, "314159265358979323846264338327", d[0]["first30"])
}

// The branch-counter instrumentation must not change what a program
// computes: the three builds print the same checksum.
func TestPlainAndInstrumentedKitsAgree(t *testing.T) {
	k := kit(t)
	var fnv []string
	for _, image := range []string{k.Image(), k.HookImage(), k.PlainImage()} {
		b := run(t, image, "cpu digits=2000")
		require.NoError(t, b.err)
		d := guest.Select(b.truths, "digits", "2000")
		require.Len(t, d, 1, b.out)
		fnv = append(fnv, d[0]["fnv"])
	}
	require.Equal(t, []string{fnv[0], fnv[0], fnv[0]}, fnv)
}

func TestClockStress(t *testing.T) {
	k := kit(t)
	b := run(t, k.Image(), "clock")
	require.NoError(t, b.err)
	var tr guest.Truth
	for _, x := range b.truths {
		if _, ok := x["reads"]; ok {
			tr = x
		}
	}
	require.NotNil(t, tr, b.out)
	require.Equal(t, uint64(10_000_000), num(t, tr, "reads"))
	require.Equal(t, "1", tr["monotonic"])
	require.GreaterOrEqual(t, num(t, tr, "last_ns"), num(t, tr, "first_ns"))
}

// syn_cont's per-lock counts follow from its structure (8 level-1 locks
// shared by 2 threads, 2 level-2 locks shared by 8), and the counters each
// lock protects prove mutual exclusion.
func TestSynContGroundTruth(t *testing.T) {
	k := kit(t)
	const iters = 300
	b := run(t, k.Image(), "syn_cont iters=300 work=8000")
	require.NoError(t, b.err, b.out)
	var l1, l2 int
	var contended uint64
	for _, tr := range b.truths {
		name, ok := tr["lock"]
		if !ok {
			continue
		}
		acq := num(t, tr, "acquired")
		require.Equal(t, acq, num(t, tr, "counter"), "lock %s: counter != acquisitions: mutual exclusion broken", name)
		require.LessOrEqual(t, num(t, tr, "contended"), acq)
		contended += num(t, tr, "contended")
		switch {
		case strings.HasPrefix(name, "L1["):
			l1++
			require.Equal(t, uint64(2*iters), acq, name)
		case strings.HasPrefix(name, "L2["):
			l2++
			require.Equal(t, uint64(8*iters), acq, name)
		default:
			t.Fatalf("unexpected lock %q", name)
		}
	}
	require.Equal(t, 8, l1)
	require.Equal(t, 2, l2)
	tot := guest.Select(b.truths, "threads", "16")
	require.Len(t, tot, 1)
	require.Equal(t, uint64(2*16*iters), num(t, tot[0], "acquired"))
	require.Equal(t, contended, num(t, tot[0], "contended"))
}

func TestDeadlockSamplesNeverDeadlock(t *testing.T) {
	k := kit(t)
	for name, expect := range map[string]string{
		"deadlock_trylock": "cycle", "deadlock_transitive": "cycle", "deadlock_gatelock": "protected",
		"deadlock_goodlock": "cycle",
	} {
		t.Run(name, func(t *testing.T) {
			b := run(t, k.Image(), name)
			require.NoError(t, b.err, b.out)
			var found bool
			for _, tr := range b.truths {
				if e, ok := tr["expect"]; ok && e != "none" {
					require.Equal(t, expect, e)
					require.NotEmpty(t, tr["cycle"])
					found = true
				}
			}
			require.True(t, found, b.out)
			require.Equal(t, "0", guest.Result(b.truths)["deadlocked"])
		})
	}
}

func TestProfileSharesAddUp(t *testing.T) {
	k := kit(t)
	b := run(t, k.Image(), "profile rounds=100")
	require.NoError(t, b.err, b.out)
	want := map[string]uint64{"prof_a": 50, "prof_b": 30, "prof_c": 15, "prof_d": 5}
	var sum uint64
	for _, tr := range b.truths {
		if f, ok := tr["func"]; ok {
			require.Equal(t, want[f], num(t, tr, "self_pct"), f)
			sum += num(t, tr, "self_pct")
		}
	}
	require.Equal(t, uint64(100), sum, b.out)
}

func TestCrashesAreReportedWithTheirVector(t *testing.T) {
	k := kit(t)
	for kind, vec := range map[string]int{"null": 14, "ud": 6, "div": 0, "gp": 13, "kwrite": 14} {
		t.Run(kind, func(t *testing.T) {
			b := run(t, k.Image(), "crash kind="+kind)
			var gf *vmm.GuestFault
			require.True(t, errors.As(b.err, &gf), "want a guest fault, got %v\n%s", b.err, b.out)
			require.Equal(t, vec, gf.Vector)
			require.Equal(t, uint16(3), gf.Sregs.CS.Selector&3, "fault should be at CPL3")
			require.Contains(t, gf.Error(), "wl_crash")
		})
	}
}

func TestBenchMarksAreTimestamped(t *testing.T) {
	k := kit(t)
	for _, mode := range []string{"exit-cpl3", "exit-cpl0", "syscall", "irq"} {
		b := run(t, k.Image(), "bench "+mode+" n=50")
		require.NoError(t, b.err, b.out)
		// The dispatcher's marks around the workload, the loop's inside.
		require.Len(t, b.res.Marks, 4, mode)
		var at []time.Duration
		for _, id := range []uint64{abi.MarkWorkloadStart, 1, 2, abi.MarkWorkloadEnd} {
			ts, ok := b.res.Marks[id]
			require.True(t, ok, "%s: mark %d", mode, id)
			at = append(at, ts)
		}
		require.IsIncreasing(t, at, mode)
		loop, ok := b.res.Between(1, 2)
		require.True(t, ok)
		whole, ok := b.res.Between(abi.MarkWorkloadStart, abi.MarkWorkloadEnd)
		require.True(t, ok)
		require.Greater(t, loop, time.Duration(0))
		require.Greater(t, whole, loop)
		if mode == "irq" {
			require.GreaterOrEqual(t, b.res.Stats.Injected, uint64(50), "every soft IRQ must be injected")
		}
	}
}

// The trace-pc hook of the kit counts CPL3 basic blocks and exits exactly
// when the count reaches the target the VMM wrote — the mechanism replay
// positions rest on. The plain kit never counts.
func TestBranchCounterExitsAtTarget(t *testing.T) {
	k := kit(t)
	for _, tc := range []struct {
		image  string
		target uint64
		exits  uint64
	}{
		{k.Image(), 1000, 1},
		{k.Image(), 1 << 62, 0},
		{k.HookImage(), 1000, 1},
		{k.HookImage(), 1 << 62, 0},
		{k.PlainImage(), 1000, 0},
	} {
		img, err := elffile.OpenImage(tc.image)
		require.NoError(t, err)
		m, err := vmm.New(vmm.Config{Image: img, Cmdline: "cpu digits=300"})
		require.NoError(t, err)
		require.NoError(t, m.SetBranchTarget(tc.target))
		res, err := m.Run(context.Background())
		require.NoError(t, err)
		require.Equal(t, tc.exits, res.Stats.SWBCExits, "%s target %d", tc.image, tc.target)
		require.Zero(t, res.Stats.SWBCStray)
		count, err := m.BranchCount()
		require.NoError(t, err)
		if tc.image != k.PlainImage() {
			require.Greater(t, count, uint64(1000), "the counter should count every loop iteration")
		} else {
			require.Zero(t, count)
		}
		m.Close()
	}
}

// scratchDisk is a 1 MiB base image of a repeating pattern and an overlay.
func scratchDisk(t *testing.T) *vmm.DiskConfig {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.img")
	require.NoError(t, os.WriteFile(base, bytes.Repeat([]byte("0123456789abcdef"), 1<<16), 0o444))
	return &vmm.DiskConfig{Base: base, Overlay: filepath.Join(dir, "overlay")}
}

// Without a disk the disk workload says so and exits 3; with one its
// whole-disk read hashes exactly the base image's bytes.
func TestDiskWorkload(t *testing.T) {
	k := kit(t)
	b := run(t, k.Image(), "disk")
	require.NoError(t, b.err)
	require.Equal(t, uint32(3), b.res.Status)
	require.Equal(t, "FAIL", guest.Result(b.truths)["result"])

	disk := scratchDisk(t)
	b = runWithDisk(t, k.Image(), "disk mode=read chunk=100", disk)
	require.NoError(t, b.err, b.out)
	want, err := os.ReadFile(disk.Base)
	require.NoError(t, err)
	h := fnv.New64a()
	h.Write(want)
	reads := guest.Select(b.truths, "mode", "read")
	require.Len(t, reads, 1, b.out)
	require.Equal(t, fmt.Sprintf("0x%016x", h.Sum64()), reads[0]["sha"])
	require.Equal(t, "2048", reads[0]["sectors"])
}

// branchy's checksums, computed here from its definition: the same
// xorshift stream, sorted, searched, counted and interpreted.
func branchyTruth(n, rounds, seed uint64) guest.Truth {
	xorshift := func(s *uint64) uint64 {
		x := *s
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		*s = x
		return x
	}
	var sortedSum, found, distinct, interp uint64
	data := make([]uint32, n)
	for r := uint64(0); r < rounds; r++ {
		s := seed + r
		for i := range data {
			data[i] = uint32(xorshift(&s)) % uint32(4*n)
		}
		slices.Sort(data)
		for i := 0; i < len(data); i += 64 {
			sortedSum = sortedSum*1099511628211 + uint64(data[i])
		}
		for range data {
			if _, ok := slices.BinarySearch(data, uint32(xorshift(&s))%uint32(4*n)); ok {
				found++
			}
		}
		distinct += uint64(len(slices.Compact(slices.Clone(data))))
		for i := uint64(0); i < n/64; i++ {
			acc := uint64(data[i])
			for j := uint64(40); j > 0; j-- {
				acc = (acc*31 ^ j) + 7
			}
			interp = interp*31 + acc
		}
	}
	return guest.Truth{"n": fmt.Sprint(n), "rounds": fmt.Sprint(rounds), "sorted": "1",
		"sorted_sum": fmt.Sprint(sortedSum), "found": fmt.Sprint(found),
		"distinct": fmt.Sprint(distinct), "interp": fmt.Sprint(interp)}
}

// The branch-dense workload computes what its definition says, in both
// builds of the kit.
func TestBranchyMatchesItsDefinition(t *testing.T) {
	k := kit(t)
	want := branchyTruth(50000, 2, 7)
	for _, image := range []string{k.Image(), k.HookImage(), k.PlainImage()} {
		b := run(t, image, "branchy n=50000 rounds=2 seed=7")
		require.NoError(t, b.err, b.out)
		got := guest.Select(b.truths, "n", "50000")
		require.Len(t, got, 1, b.out)
		require.Equal(t, want, got[0], image)
	}
}
