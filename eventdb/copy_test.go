package eventdb

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// Copy puts a run's events after those added before, each with its
// arrival ordinal there plus theirs, changes only the kinds it was asked
// to (with small batches, across several commits), and refuses a run
// that is not complete or not there.
func TestCopyGoesOnFromWhatWasAdded(t *testing.T) {
	src, err := Open(filepath.Join(t.TempDir(), "src"), nil)
	require.NoError(t, err)
	defer src.Close()
	first, second := genEvents(1, 3000, 4), genEvents(2, 5000, 4)
	srcRun := ingest(t, src, second)

	dst, err := Open(filepath.Join(t.TempDir(), "dst"), &Options{BatchEvents: 700})
	require.NoError(t, err)
	defer dst.Close()
	run, in, err := dst.NewRun("test.tape", testProbes, "swbc every 100000")
	require.NoError(t, err)
	for i := range first {
		require.NoError(t, in.Add(&first[i]))
	}
	require.NoError(t, in.Copy(src, srcRun.ID, []Kind{KindSample}, func(e *Event) { e.Addr++ }))
	require.NoError(t, in.Finish())

	require.NotEmpty(t, filter(second, func(e *Event) bool { return e.Kind == KindSample }), "samples to rewrite")
	want := append([]Event(nil), first...)
	for _, e := range second {
		e.Seq += uint32(len(first))
		if e.Kind == KindSample {
			e.Addr++
		}
		want = append(want, e)
	}
	requireEvents(t, keyOrder(want), collect(t, dst, Query{Run: run.ID}), "copied after added")
	r, err := dst.Run(run.ID)
	require.NoError(t, err)
	require.Equal(t, uint64(len(want)), r.Events)

	_, open, err := src.NewRun("test.tape", testProbes, "swbc every 100000")
	require.NoError(t, err)
	require.NoError(t, open.Add(&first[0]))
	require.NoError(t, open.Close())
	_, in2, err := dst.NewRun("test.tape", testProbes, "swbc every 100000")
	require.NoError(t, err)
	require.ErrorContains(t, in2.Copy(src, open.Run().ID, nil, nil), "incomplete")
	require.ErrorContains(t, in2.Copy(src, 99, nil, nil), "99")
	require.NoError(t, in2.Close())
}

// A damaged source — a value that does not decode, a seq past its run's
// events, an event more than its record counts — is refused, naming it.
func TestCopyRefusesADamagedRun(t *testing.T) {
	evs := genEvents(4, 500, 3)
	victim := keyOrder(evs)[123]
	key := func(exit uint64, seq uint32) []byte {
		k := codec.EventKey{Run: 1, Kind: uint8(victim.Kind), Thread: victim.Thread, Exit: exit, Branch: victim.Pos.Branch, Seq: seq}
		return k.Append(nil)
	}
	at := victim.Pos.Exit
	good := codec.AppendValue(nil, &codec.Value{Addr: 1})
	for _, tc := range []struct {
		name       string
		key, value []byte
		want       string
	}{
		{"value", key(at, victim.Seq), []byte{codec.SchemaVersion, 0xff}, "corrupt"},
		{"seq", key(at, uint32(len(evs))), good, "past the run's 500 events"},
		{"extra", key(at+1<<40, victim.Seq), good, "holds 501 events, its record says 500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "src")
			src, err := Open(dir, nil)
			require.NoError(t, err)
			require.Equal(t, uint32(1), ingest(t, src, evs).ID)
			require.NoError(t, src.Close())
			rawSet(t, dir, tc.key, tc.value)
			src, err = Open(dir, nil)
			require.NoError(t, err)
			defer src.Close()

			dst, err := Open(filepath.Join(t.TempDir(), "dst"), nil)
			require.NoError(t, err)
			defer dst.Close()
			_, in, err := dst.NewRun("test.tape", testProbes, "swbc every 100000")
			require.NoError(t, err)
			require.ErrorContains(t, in.Copy(src, 1, nil, nil), tc.want)
			require.NoError(t, in.Close())
		})
	}
}
