package tooltest

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/guest"
)

// lockProbeTable is the probe table of a replay with guest.LockProbes, as
// far as the lock tools read it: names and argument counts.
func lockProbeTable() []eventdb.Probe {
	var table []eventdb.Probe
	for i, spec := range guest.LockProbes {
		var p eventdb.Probe
		p.ID, p.Spec = uint32(i+1), spec
		for j, c := range spec {
			if c == '=' {
				p.Name = spec[:j]
				break
			}
		}
		if p.Name != "locked" {
			p.Args = []string{"arg"}
		}
		table = append(table, p)
	}
	return table
}

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
	run, in, err := db.NewRun("synthetic.tape", lockProbeTable(), "")
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
		if probe == 2 {
			ev.Kind = eventdb.KindProbeReturn
		}
		if err := in.Add(&ev); err != nil {
			tb.Fatal(err)
		}
	}
	const lock, locked, unlock = 1, 2, 3
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
				add(t, lock, 0x401000, a)
				add(t, locked, 0x401050)
				written += 3
				if s.iter%8 == 0 {
					add(t, lock, 0x401000, b)
					add(t, locked, 0x401080)
					add(t, unlock, 0x401100, b)
					written += 3
				}
				add(t, unlock, 0x401100, a)
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

// PeakHeap samples the Go heap in use every few milliseconds until the
// returned function is called, which returns the highest value seen.
func PeakHeap() (stop func() uint64) {
	var (
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		sample()
		return peak
	}
}
