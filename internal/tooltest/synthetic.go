package tooltest

import (
	"runtime"
	"testing"
	"time"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/host/tick"
	"github.com/reprise-vm/reprise/probes"
)

// lockProbeTable is the probe table of a replay with guest.LockProbes, as
// far as the lock tools read it: names, argument names, return or entry.
func lockProbeTable(tb testing.TB) []eventdb.Probe {
	specs, err := probes.ParseSpecs(guest.LockProbes)
	if err != nil {
		tb.Fatal(err)
	}
	table := make([]eventdb.Probe, len(specs))
	for i, sp := range specs {
		table[i] = eventdb.Probe{ID: uint32(i + 1), Name: sp.Name, Spec: sp.Text, Symbol: sp.Symbol, Return: sp.Return}
		for _, a := range sp.Args {
			table[i].Args = append(table[i].Args, a.Name)
		}
	}
	return table
}

// Probe ids of the lock roles in lockProbeTable: guest.LockProbes' order.
const probeLock, probeLocked, probeUnlock = 1, 2, 3

// SyntheticLockRun fills db with a run of about n lock probe events: 16
// threads taking 64 locks, one acquisition in eight with a second lock
// nested (so the deadlock tool has cycles to find),
// threads interleaved every few operations as a scheduler would. The DB
// is compacted, so a benchmark times the tool, not Pebble's compactions.
func SyntheticLockRun(tb testing.TB, db *eventdb.DB, n int) *eventdb.Run {
	tb.Helper()
	const threads, locks = 16, 64
	lockAddr := func(i int) uint64 { return 0x47c000 + uint64(i%locks)*32 }
	syms := []eventdb.Symbol{{Name: "locks", Addr: 0x47c000, Size: locks * 32}, {Name: "worker", Addr: 0x401000, Size: 0x400, Func: true}}
	if err := db.SetSymbols(eventdb.NewSymbols("synthetic", syms)); err != nil {
		tb.Fatal(err)
	}
	run, in, err := db.NewRun("synthetic.tape", lockProbeTable(tb), "")
	if err != nil {
		tb.Fatal(err)
	}
	type state struct {
		pos  eventdb.Position
		iter int
	}
	st := make([]state, threads)
	var now time.Duration
	add := func(t int, probe uint32, addr uint64, args ...uint64) {
		st[t].pos.Branch += 37
		now += 700 * time.Nanosecond
		ev := eventdb.Event{Kind: eventdb.KindProbeEntry, Thread: uint32(t + 2), Pos: st[t].pos, Time: now, Probe: probe, Addr: addr, Args: args}
		if probe == probeLocked {
			ev.Kind = eventdb.KindProbeReturn
		}
		if err := in.Add(&ev); err != nil {
			tb.Fatal(err)
		}
	}
	for written := 0; written < n; {
		for t := range threads {
			for range 4 { // a time slice: a few acquisitions
				s := &st[t]
				// One acquisition in eight nests a second lock, up the
				// ring of locks or down it: threads whose rings cross
				// take two locks in both orders.
				x := t*4 + s.iter
				a, b := lockAddr(x), lockAddr(x+1)
				if s.iter%16 == 8 {
					a, b = b, a
				}
				add(t, probeLock, 0x401000, a)
				add(t, probeLocked, 0x401050)
				written += 3
				if s.iter%8 == 0 {
					add(t, probeLock, 0x401000, b)
					add(t, probeLocked, 0x401080)
					add(t, probeUnlock, 0x401100, b)
					written += 3
				}
				add(t, probeUnlock, 0x401100, a)
				s.iter++
			}
		}
	}
	if err := in.Finish(); err != nil {
		tb.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		tb.Fatal(err)
	}
	return run
}

// LockStep is one operation of a scripted lock run: Thread takes the
// lock at Lock (a blocking lock that gets it at once), or releases it.
type LockStep struct {
	Thread  uint32
	Lock    uint64
	Release bool
}

// ScriptedLockRun fills db with a run of the lock operations steps, in
// that order, for tests that need an exact lock pattern without a guest.
// locks are the symbols that name the lock addresses; every acquisition
// site is in a function "worker".
func ScriptedLockRun(tb testing.TB, db *eventdb.DB, locks []eventdb.Symbol, steps []LockStep) *eventdb.Run {
	tb.Helper()
	syms := append([]eventdb.Symbol{{Name: "worker", Addr: 0x401000, Size: 0x400, Func: true}}, locks...)
	if err := db.SetSymbols(eventdb.NewSymbols("scripted", syms)); err != nil {
		tb.Fatal(err)
	}
	run, in, err := db.NewRun("scripted.tape", lockProbeTable(tb), "")
	if err != nil {
		tb.Fatal(err)
	}
	pos := map[uint32]eventdb.Position{}
	var now time.Duration
	add := func(thread, probe uint32, addr uint64, args ...uint64) {
		p := pos[thread]
		p.Branch += 37
		pos[thread] = p
		now += 700 * time.Nanosecond
		ev := eventdb.Event{Kind: eventdb.KindProbeEntry, Thread: thread, Pos: p, Time: now, Probe: probe, Addr: addr, Args: args}
		if probe == probeLocked {
			ev.Kind = eventdb.KindProbeReturn
		}
		if err := in.Add(&ev); err != nil {
			tb.Fatal(err)
		}
	}
	for _, st := range steps {
		if st.Release {
			add(st.Thread, probeUnlock, 0x401100, st.Lock)
			continue
		}
		add(st.Thread, probeLock, 0x401000, st.Lock)
		add(st.Thread, probeLocked, 0x401050)
	}
	if err := in.Finish(); err != nil {
		tb.Fatal(err)
	}
	return run
}

// PeakHeap samples the Go heap in use every few milliseconds until the
// returned function is called, which returns the highest value seen.
func PeakHeap() (stop func() uint64) {
	var peak uint64 // the ticker's until stopTick returns, then ours
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	stopTick := tick.Every(5*time.Millisecond, sample)
	return func() uint64 {
		stopTick()
		sample()
		return peak
	}
}

// BenchLockTool times tool over a compacted 10 M-event synthetic lock run
// (SyntheticLockRun). tool returns a figure of its result, reported under
// unit; peak-MiB is the Go heap's high-water mark while it ran.
func BenchLockTool(b *testing.B, unit string, tool func(db *eventdb.DB, run uint32) (float64, error)) {
	db, err := eventdb.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	run := SyntheticLockRun(b, db, 10_000_000)
	b.ResetTimer()
	for range b.N {
		stop := PeakHeap()
		figure, err := tool(db, run.ID)
		peak := stop()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(figure, unit)
		b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	}
	b.ReportMetric(float64(run.Events), "events")
}
