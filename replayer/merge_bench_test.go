package replayer

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/eventdb"
)

// BenchmarkMerge is the second write of a split replay: Merge copying the
// runs of two segments' scratch DBs, each of a million events as a
// probed and sampled Linux replay stores them (probe entries and returns
// on eight threads, samples with a stack and their objects), into one run.
// Its CPU time counts as much as its wall time: it runs while the later
// segments replay on the same CPUs.
func BenchmarkMerge(b *testing.B) {
	const perPart = 1 << 20
	dir := b.TempDir()
	objs := []eventdb.Object{{Path: "/bin/prog", Start: 0x400000, End: 0x500000}, {Path: "/lib/libc.so.6", Start: 0x7f0000000000, End: 0x7f0000200000}}
	maps := []eventdb.Mapping{{PID: 1, Start: 0x400000, End: 0x500000, Path: "/bin/prog", Exec: true}}
	parts := make([]Part, 2)
	for p := range parts {
		db, err := eventdb.Open(filepath.Join(dir, fmt.Sprint(p)), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if err := db.SetSymbols(eventdb.NewObjectSymbols("prog", maps, objs)); err != nil {
			b.Fatal(err)
		}
		run, in, err := db.NewRun("t.tape", []eventdb.Probe{{ID: 1, Name: "lock", Spec: "lock"}}, "every 1ms")
		if err != nil {
			b.Fatal(err)
		}
		base := uint64(p * perPart)
		for i := range uint64(perPart) {
			e := eventdb.Event{Thread: uint32(i % 8), Pos: eventdb.Position{Exit: base + i}, Probe: 1, Addr: 0x401000 + i%64, Args: []uint64{i}}
			switch i % 4 {
			case 0:
				e.Kind = eventdb.KindProbeEntry
			case 1:
				e.Kind = eventdb.KindProbeReturn
			default:
				e.Kind, e.Probe = eventdb.KindSample, 0
				e.Stack = []uint64{0x7f0000001000, 0x401234}
				e.Args = eventdb.SampleArgs(0, false, []eventdb.ObjectRef{1, 2, 1})
			}
			if err := in.Add(&e); err != nil {
				b.Fatal(err)
			}
		}
		if err := in.Finish(); err != nil {
			b.Fatal(err)
		}
		final, err := db.Run(run.ID)
		if err != nil {
			b.Fatal(err)
		}
		parts[p] = Part{DB: db, Run: &final, Last: p == len(parts)-1}
	}
	cpu0 := processCPU(b)
	b.ResetTimer()
	for i := range b.N {
		out, err := eventdb.Open(filepath.Join(dir, fmt.Sprint("out", i)), nil)
		if err != nil {
			b.Fatal(err)
		}
		run, err := Merge(out, "t.tape", func(yield func(Part, error) bool) {
			for _, p := range parts {
				if !yield(p, nil) {
					return
				}
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		if run.Events != 2*perPart {
			b.Fatalf("merged %d events, want %d", run.Events, 2*perPart)
		}
		out.Close()
	}
	b.ReportMetric(float64(2*perPart*b.N)/b.Elapsed().Seconds()/1e6, "M-events/s")
	b.ReportMetric(float64(2*perPart*b.N)/(processCPU(b)-cpu0).Seconds()/1e6, "M-events/cpu-s")
}

// processCPU is the CPU time the process has used, on every thread.
func processCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
