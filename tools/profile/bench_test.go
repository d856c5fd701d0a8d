package profile_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/internal/tooltest"
	reprof "github.com/reprise-vm/reprise/tools/profile"
)

// The benchmark's run: a guest of benchFuncs functions whose threads
// wander over benchPaths call paths each (stacks of 3 to 8 return
// addresses), the hot paths far more often than the rest.
const (
	benchSamples = 10_000_000
	benchThreads = 16
	benchFuncs   = 48
	benchPaths   = 256 // per thread
	benchLeafBBs = 32  // distinct sampled addresses per function
	funcBase     = 0x400000
	funcSize     = 0x1000
)

func benchFuncAddr(f int) uint64 { return funcBase + uint64(f)*funcSize }

// benchCallPath is a stack: the leaf function and the return addresses.
type benchCallPath struct {
	leaf  int
	stack []uint64
}

// benchCallPaths draws a thread's call paths from the root function 0;
// a caller's call to a callee returns to a fixed site in the caller.
func benchCallPaths(rng *rand.Rand) []benchCallPath {
	paths := make([]benchCallPath, benchPaths)
	for i := range paths {
		depth := 3 + rng.IntN(6)
		caller := 0
		var stack []uint64
		for range depth {
			callee := 1 + rng.IntN(benchFuncs-1)
			stack = append(stack, benchFuncAddr(caller)+0x100+uint64(callee)*0x20)
			caller = callee
		}
		// innermost first
		for l, r := 0, len(stack)-1; l < r; l, r = l+1, r-1 {
			stack[l], stack[r] = stack[r], stack[l]
		}
		paths[i] = benchCallPath{leaf: caller, stack: stack}
	}
	return paths
}

// buildBenchDB writes the benchmark's run into a new DB in dir.
func buildBenchDB(b *testing.B, dir string) {
	db, err := eventdb.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	syms := make([]eventdb.Symbol, benchFuncs)
	for f := range syms {
		syms[f] = eventdb.Symbol{Name: fmt.Sprintf("func%02d", f), Addr: benchFuncAddr(f), Size: funcSize, Func: true}
	}
	if err := db.SetSymbols(eventdb.NewSymbols("bench-image", syms)); err != nil {
		b.Fatal(err)
	}
	_, in, err := db.NewRun("bench.tape", nil, "every 1000 user-mode branch counts (deterministic)")
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	threads := make([][]benchCallPath, benchThreads)
	for t := range threads {
		threads[t] = benchCallPaths(rng)
	}
	// Path ranks follow a Zipf law: a few hot paths, a long tail.
	zipf := rand.NewZipf(rng, 1.1, 4, benchPaths-1)
	for i := range benchSamples {
		t := i % benchThreads
		p := &threads[t][zipf.Uint64()]
		e := eventdb.Event{Kind: eventdb.KindSample, Thread: uint32(t + 1),
			Pos:  eventdb.Position{Exit: uint64(i / 64), Branch: uint64(i) * 1000},
			Time: time.Duration(i) * time.Microsecond,
			Addr: benchFuncAddr(p.leaf) + 0x10 + uint64(rng.IntN(benchLeafBBs))*0x10, Stack: p.stack}
		if err := in.Add(&e); err != nil {
			b.Fatal(err)
		}
	}
	if err := in.Finish(); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
}

// resetPeakRSS resets the kernel's record of the process's peak resident
// set (VmHWM), so that peakRSS then reports the peak since; false if the
// kernel does not allow it.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS returns VmHWM from /proc/self/status, in bytes.
func peakRSS(b *testing.B) uint64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("VmHWM %q: %v", v, err)
			}
			return kib << 10
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// countWriter counts the bytes written to it and drops them.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// BenchmarkProfile10M times Build (call graph included) and WritePprof
// over a DB of 10 M samples (built once, untimed, in ~10-20 s), reopened
// as the CLI would and compacted (untimed) so that Pebble's background
// compactions of the new DB do not run during the timed part, which
// measures the tool alone. peak-heap-MiB is the most Go heap in use seen
// during the timed part (sampled every 5 ms); peak-rss-MiB the process's
// peak resident set then, which adds Pebble's block cache (allocated
// outside the Go heap) and the runtime's own memory (an upper bound: the
// reset starts it from what the untimed ingest left resident).
//
//	go test -run '^$' -bench Profile10M -benchtime 1x ./tools/profile
func BenchmarkProfile10M(b *testing.B) {
	dir := b.TempDir()
	buildBenchDB(b, dir)
	db, err := eventdb.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Compact(); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var pprofBytes int64
	rss := resetPeakRSS()
	stop := tooltest.PeakHeap()
	for b.Loop() {
		p, err := reprof.Build(db, reprof.Options{CallGraph: true})
		if err != nil {
			b.Fatal(err)
		}
		if p.Samples != benchSamples {
			b.Fatalf("profiled %d samples, want %d", p.Samples, benchSamples)
		}
		w := &countWriter{}
		if err := p.WritePprof(w); err != nil {
			b.Fatal(err)
		}
		pprofBytes = w.n
	}
	b.ReportMetric(float64(stop())/(1<<20), "peak-heap-MiB")
	if rss {
		b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak-rss-MiB")
	}
	b.ReportMetric(float64(pprofBytes)/(1<<10), "pprof-KiB")
	b.ReportMetric(benchSamples/(b.Elapsed().Seconds()/float64(b.N)), "samples/s")
}
