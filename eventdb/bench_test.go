package eventdb

import (
	"context"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// benchEvents is a realistic mix (see genEvents): 40% samples with 2–13
// frames, 50% lock probes with arguments, the rest switches, user and
// thread events, over 16 threads.
var benchEvents = genEvents(11, 1<<18, 16)

// addBench adds n events cycled from benchEvents, shifting positions so
// that each cycle continues every thread's execution.
func addBench(b *testing.B, in *Ingest, n int) {
	var e Event
	for i := range n {
		e = benchEvents[i%len(benchEvents)]
		e.Pos.Exit += uint64(i/len(benchEvents)) << 32
		if err := in.Add(&e); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the process's user+system CPU time: on a shared machine it
// says more than wall time about what one event costs, background flushes
// and compactions included.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dirSize returns the size of every file under dir, and of the sstables
// alone. The rest is Pebble's WAL, manifest and options files: a fixed
// cost, not a per-event one (a run's events bypass the WAL).
func dirSize(b *testing.B, dir string) (all, sst int64) {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			all += info.Size()
			if filepath.Ext(path) == ".sst" {
				sst += info.Size()
			}
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return all, sst
}

// BenchmarkIngest measures Add through Finish with the default options:
// Sync off, so a batch commits while the next one fills. bytes/event is the DB directory's size after Finish and
// Close; sst-bytes/event counts the sstables alone. Pebble's background
// flushes and compactions run meanwhile: cpu-ns/event is the process's
// CPU time per event, all goroutines included.
//
//	go test ./eventdb -run '^$' -bench Ingest -benchtime 3000000x
func BenchmarkIngest(b *testing.B) {
	dir := b.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	_, in, err := db.NewRun("bench.tape", testProbes, "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	addBench(b, in, b.N)
	if err := in.Finish(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cpu := cpuTime(b) - cpu0
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	all, sst := dirSize(b, dir)
	b.ReportMetric(float64(all)/float64(b.N), "bytes/event")
	b.ReportMetric(float64(sst)/float64(b.N), "sst-bytes/event")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/event")
}

// BenchmarkQuery measures scanning (and decoding) a finished, compacted
// run of 1 Mi events: the whole run, and one kind and thread (a tight
// range: ~1/50 of the run).
func BenchmarkQuery(b *testing.B) {
	const n = 1 << 20
	db, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	_, in, err := db.NewRun("bench.tape", testProbes, "")
	if err != nil {
		b.Fatal(err)
	}
	addBench(b, in, n)
	if err := in.Finish(); err != nil {
		b.Fatal(err)
	}
	// Let compactions settle, so they neither compete with the scan nor
	// leave it more L0 files to merge than a DB at rest has.
	if err := db.pdb.Compact(context.Background(), []byte{'e'}, []byte{'f'}, true); err != nil {
		b.Fatal(err)
	}
	thread := uint32(3)
	for _, bc := range []struct {
		name string
		q    Query
	}{
		{"run", Query{Run: 1}},
		{"kind-thread", Query{Run: 1, Kinds: []Kind{KindSample}, Thread: &thread}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			scanned := 0
			for b.Loop() {
				it := db.Query(bc.q)
				for it.Next() {
					scanned++
				}
				if err := it.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(scanned)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
