package replayer

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/eventdb"
)

// BenchmarkSegmentEvents is what a split replay does with its segments'
// events besides replaying: each segment's store and Merge's copy into
// the one run, for two segments of a million events each as a probed and
// sampled Linux replay stores them (probe entries and returns on eight
// threads, samples with a stack and their objects) — side by side, each
// segment into a spool (what ParallelToDB does) and into a scratch DB of
// its own (what it did before; what a share replayed on another machine
// still is). Its CPU time counts as much as its wall time: it runs while
// the later segments replay on the same CPUs.
func BenchmarkSegmentEvents(b *testing.B) {
	const perPart = 1 << 20
	dir := b.TempDir()
	objs := []eventdb.Object{{Path: "/bin/prog", Start: 0x400000, End: 0x500000}, {Path: "/lib/libc.so.6", Start: 0x7f0000000000, End: 0x7f0000200000}}
	maps := []eventdb.Mapping{{PID: 1, Start: 0x400000, End: 0x500000, Path: "/bin/prog", Exec: true}}
	probes := []eventdb.Probe{{ID: 1, Name: "lock", Spec: "lock"}}
	const sampling = "every 1ms"
	events := func(p int, add func(*eventdb.Event) error) {
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
			if err := add(&e); err != nil {
				b.Fatal(err)
			}
		}
	}
	// segment stores part p's events the one way or the other.
	segment := func(i, p int, spooled bool) Part {
		name := filepath.Join(dir, fmt.Sprint(i, "-", p))
		last := p == 1
		if spooled {
			s, err := eventdb.NewSpool(name)
			if err != nil {
				b.Fatal(err)
			}
			events(p, s.Add)
			return Part{Last: last, segment: &spooledSegment{n: p + 1, spool: s, stored: stored{probes: probes, sampling: sampling, symbols: eventdb.NewObjectSymbols("prog", maps, objs)}}}
		}
		db, err := eventdb.Open(name, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := db.SetSymbols(eventdb.NewObjectSymbols("prog", maps, objs)); err != nil {
			b.Fatal(err)
		}
		run, in, err := db.NewRun("t.tape", probes, sampling)
		if err != nil {
			b.Fatal(err)
		}
		events(p, in.Add)
		if err := in.Finish(); err != nil {
			b.Fatal(err)
		}
		final, err := db.Run(run.ID)
		if err != nil {
			b.Fatal(err)
		}
		return Part{DB: db, Run: &final, Last: last}
	}
	var wall, cpu [2]time.Duration // spooled, scratch DBs
	for i := range b.N {
		for way, spooled := range []bool{true, false} {
			t0, c0 := time.Now(), processCPU(b)
			out, err := eventdb.Open(filepath.Join(dir, fmt.Sprint("out", i, way)), nil)
			if err != nil {
				b.Fatal(err)
			}
			parts := []Part{segment(i, 0, spooled), segment(i, 1, spooled)}
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
			for _, p := range parts {
				if p.segment != nil {
					p.segment.spool.Close()
				} else {
					p.DB.Close()
				}
			}
			out.Close()
			wall[way] += time.Since(t0)
			cpu[way] += processCPU(b) - c0
		}
	}
	n := float64(2 * perPart * b.N)
	b.ReportMetric(n/cpu[0].Seconds()/1e6, "M-events/cpu-s-spooled")
	b.ReportMetric(n/cpu[1].Seconds()/1e6, "M-events/cpu-s-scratch-db")
	b.ReportMetric(cpu[0].Seconds()/cpu[1].Seconds(), "x-cpu-spooled/db")
	b.ReportMetric(wall[0].Seconds()/wall[1].Seconds(), "x-wall-spooled/db")
}

// processCPU is the process's CPU time so far, user and system.
func processCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
