package replayer

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/eventdb"
)

// A split replay's parts merged hold what one replay storing every event
// in order holds: each event at its position with its arrival ordinal,
// found in key order and in arrival order alike, with the mappings and
// objects each part's own table numbered renumbered into the joined one.
func TestMergeIsOneReplaysRun(t *testing.T) {
	dir := t.TempDir()
	o1 := eventdb.Object{Path: "/bin/prog", Start: 0x400000, End: 0x500000}
	o2 := eventdb.Object{Path: "/lib/libc.so.6", Start: 0x7f0000000000, End: 0x7f0000200000}
	m1 := eventdb.Mapping{PID: 1, Start: 0x400000, End: 0x500000, Path: "/bin/prog", Exec: true}
	m2 := eventdb.Mapping{PID: 1, Start: 0x7f0000000000, End: 0x7f0000200000, Path: "/lib/libc.so.6", Exec: true}

	// The replay's events in arrival order, as the joined table numbers
	// them: positions increase, several events share one, the threads
	// take turns; the second part maps libc.
	const cut = 600
	var events []eventdb.Event
	for i := range uint64(1000) {
		e := eventdb.Event{Thread: uint32(i % 3), Pos: eventdb.Position{Exit: 10 + i/4, Branch: i % 2}, Time: time.Duration(i) * time.Microsecond,
			Probe: 1, Addr: 0x401000 + i, Args: []uint64{i}}
		switch {
		case i == cut+5:
			e.Kind, e.Probe, e.Addr, e.Args = eventdb.KindMapping, 0, m2.Start, []uint64{m2.End, 0, 1, 1}
		case i%3 == 0:
			e.Kind = eventdb.KindProbeEntry
		case i%3 == 1:
			e.Kind, e.Probe = eventdb.KindSample, 0
			e.Stack = []uint64{0x7f0000001000 + i, 0x401234}
			e.Args = eventdb.SampleArgs(i, false, []eventdb.ObjectRef{1, 2, 1})
		default:
			e.Kind = eventdb.KindProbeReturn
		}
		events = append(events, e)
	}
	probes := []eventdb.Probe{{ID: 1, Name: "lock", Spec: "lock"}}
	store := func(name string, syms *eventdb.Symbols, evs []eventdb.Event) (*eventdb.DB, *eventdb.Run) {
		db, err := eventdb.Open(filepath.Join(dir, name), nil)
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		require.NoError(t, db.SetSymbols(syms))
		run, in, err := db.NewRun("t.tape", probes, "every 1ms")
		require.NoError(t, err)
		for i := range evs {
			require.NoError(t, in.Add(&evs[i]))
		}
		require.NoError(t, in.Finish())
		r, err := db.Run(run.ID)
		require.NoError(t, err)
		return db, &r
	}
	joined := eventdb.NewObjectSymbols("prog", []eventdb.Mapping{m1, m2}, []eventdb.Object{o1, o2})
	whole, wholeRun := store("whole", joined, events)

	// The second part's table lists its mappings and objects the other
	// way round, and its events number them so.
	second := make([]eventdb.Event, len(events)-cut)
	for i, e := range events[cut:] {
		e.Args = append([]uint64(nil), e.Args...)
		if e.Kind == eventdb.KindMapping {
			e.Args[3] = 0
		}
		for j, ref := range e.SampleObjects() {
			e.SampleObjects()[j] = 3 - ref
		}
		second[i] = e
	}
	a, aRun := store("a", eventdb.NewObjectSymbols("prog", []eventdb.Mapping{m1}, []eventdb.Object{o1, o2}), events[:cut])
	b, bRun := store("b", eventdb.NewObjectSymbols("prog", []eventdb.Mapping{m2, m1}, []eventdb.Object{o2, o1}), second)

	out, err := eventdb.Open(filepath.Join(dir, "out"), nil)
	require.NoError(t, err)
	defer out.Close()
	run, err := Merge(out, "t.tape", func(yield func(Part, error) bool) {
		_ = yield(Part{DB: a, Run: aRun}, nil) && yield(Part{DB: b, Run: bRun, Last: true}, nil)
	})
	require.NoError(t, err)
	require.True(t, run.Complete)
	require.Equal(t, uint64(len(events)), run.Events)

	all := func(db *eventdb.DB, run uint32, merged bool) []string {
		var out []string
		add := func(e *eventdb.Event) {
			out = append(out, fmt.Sprintf("%v %d %v seq %d t %v p %d a %#x %v %v", e.Kind, e.Thread, e.Pos, e.Seq, e.Time, e.Probe, e.Addr, e.Args, e.Stack))
		}
		if merged {
			it := db.Merged(eventdb.Query{Run: run})
			for it.Next() {
				add(it.Event())
			}
			require.NoError(t, it.Close())
		} else {
			it := db.Query(eventdb.Query{Run: run})
			for it.Next() {
				add(it.Event())
			}
			require.NoError(t, it.Close())
		}
		return out
	}
	for _, merged := range []bool{false, true} {
		want := all(whole, wholeRun.ID, merged)
		require.Len(t, want, len(events))
		require.Equal(t, want, all(out, run.ID, merged), "arrival order: %v", merged)
	}
	syms, err := out.Symbols()
	require.NoError(t, err)
	require.Equal(t, []eventdb.Mapping{m1, m2}, syms.Mappings)
	require.Len(t, syms.Objects, 2)
	require.Equal(t, o1.Path, syms.Objects[0].Path)
}
