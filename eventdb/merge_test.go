package eventdb

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/symtab"
)

// Merged gives back arrival order across threads and kinds; Threads lists
// each kind's threads.
func TestMergedArrivalOrder(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer db.Close()
	evs := genEvents(7, 20000, 9)
	run := ingest(t, db, evs)

	kinds := []Kind{KindProbeEntry, KindProbeReturn, KindSwitch}
	want := filter(evs, func(e *Event) bool { return slices.Contains(kinds, e.Kind) })
	m := db.Merged(Query{Run: run.ID, Kinds: kinds})
	var got []Event
	for m.Next() {
		got = append(got, *m.Event().Clone())
	}
	require.NoError(t, m.Close())
	requireEvents(t, want, got, "merged")

	threads, err := db.Threads(run.ID, KindSwitch)
	require.NoError(t, err)
	var seen []uint32
	for _, e := range evs {
		if e.Kind == KindSwitch && !slices.Contains(seen, e.Thread) {
			seen = append(seen, e.Thread)
		}
	}
	slices.Sort(seen)
	require.Equal(t, seen, threads)

	m = db.Merged(Query{Run: run.ID + 1})
	require.False(t, m.Next())
	require.ErrorIs(t, m.Close(), ErrNoRun)
}

// The symbol table round-trips, resolves addresses, and a DB refuses the
// symbols of another image.
func TestSymbols(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Symbols()
	require.ErrorIs(t, err, ErrNoSymbols)
	tab := NewSymbols("img1", []Symbol{{Name: "b", Addr: 0x2000, Size: 0x10, Func: true}, {Name: "a", Addr: 0x1000, Func: true}, {Name: "data", Addr: 0x3000, Size: 8}})
	require.NoError(t, db.SetSymbols(tab))
	require.NoError(t, db.SetSymbols(tab), "the same image again")
	require.ErrorContains(t, db.SetSymbols(NewSymbols("img2", nil)), "one DB per recording")
	got, err := db.Symbols()
	require.NoError(t, err)
	require.Equal(t, tab.All(), got.All())
	require.Equal(t, "a+0x10", got.Describe(0x1010))
	require.Equal(t, "b", got.Function(0x200f))
	require.Equal(t, "0x2010", got.Describe(0x2010), "past b's size")
	require.Equal(t, "data+0x4", got.Describe(0x3004))
	require.Equal(t, "0x3004", got.Function(0x3004), "not a function")
	require.Equal(t, "0xfff", got.Describe(0xfff))
}

// A Linux program's table keeps each loaded file's symbols: two files
// loaded at one address (two processes' executables) each name it their
// own way, through the object a sample says it was in, and both survive
// the round trip; an object index past the table's is a corrupt table.
func TestObjectSymbols(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer db.Close()
	obj := func(path, fn string) Object {
		return Object{Path: path, Start: 0x1000, End: 0x3000, Symbols: symtab.New([]Symbol{
			{Name: fn, Addr: 0x1100, Size: 0x100, Func: true}, {Name: "shared", Addr: 0x2000, Size: 0x10, Func: true}})}
	}
	maps := []Mapping{{PID: 1, Start: 0x1000, End: 0x3000, Path: "/bin/a", Exec: true}, {PID: 2, Start: 0x1000, End: 0x3000, Path: "/bin/b", Exec: true}}
	tab := NewObjectSymbols("img", maps, []Object{obj("/bin/a", "alpha"), obj("/bin/b", "beta")})
	require.NoError(t, db.SetSymbols(tab))
	got, err := db.Symbols()
	require.NoError(t, err)
	require.Len(t, got.Objects, 2)
	require.Equal(t, "alpha+0x10", got.DescribeIn(1, 0x1110))
	require.Equal(t, "beta", got.FunctionIn(2, 0x1180))
	require.Equal(t, "shared", got.FunctionIn(2, 0x2000))
	require.Equal(t, "b+0x1f00", got.FunctionIn(2, 0x2f00), "in b, past its symbols")
	require.Contains(t, []string{"alpha", "beta"}, got.FunctionIn(0, 0x1180), "no object: either")
	require.Equal(t, got.FunctionIn(0, 0x1180), got.FunctionIn(3, 0x1180), "no such object: as none")
	require.Equal(t, maps, got.Mappings)
}
