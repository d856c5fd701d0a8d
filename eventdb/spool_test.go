package eventdb

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A spool's events go into a run after those added before it, in the
// order they were spooled, each with its arrival ordinal plus theirs,
// the kinds asked for changed by fix (across several commits); two spools
// go in one after the other. Closing a spool removes its file.
func TestCopySpoolGoesOnFromWhatWasAdded(t *testing.T) {
	dir := t.TempDir()
	first, second, third := genEvents(1, 3000, 4), genEvents(2, 5000, 4), genEvents(3, 2000, 3)
	spool := func(name string, evs []Event) *Spool {
		s, err := NewSpool(filepath.Join(dir, name))
		require.NoError(t, err)
		for i := range evs {
			require.NoError(t, s.Add(&evs[i]))
		}
		require.Equal(t, uint64(len(evs)), s.Events())
		return s
	}
	s2, s3 := spool("2", second), spool("3", third)
	_, err := NewSpool(filepath.Join(dir, "2"))
	require.Error(t, err, "a spool is a new file")

	db, err := Open(filepath.Join(dir, "db"), &Options{BatchEvents: 700})
	require.NoError(t, err)
	defer db.Close()
	run, in, err := db.NewRun("test.tape", testProbes, "swbc every 100000")
	require.NoError(t, err)
	for i := range first {
		require.NoError(t, in.Add(&first[i]))
	}
	require.NoError(t, in.CopySpool(s2, []Kind{KindSample}, func(e *Event) { e.Addr++ }))
	require.NoError(t, in.CopySpool(s3, nil, nil))
	require.NoError(t, in.Finish())
	for _, s := range []*Spool{s2, s3} {
		require.NoError(t, s.Close())
		_, err := os.Stat(s.path)
		require.ErrorIs(t, err, os.ErrNotExist)
	}

	require.NotEmpty(t, filter(second, func(e *Event) bool { return e.Kind == KindSample }), "samples to rewrite")
	want := append([]Event(nil), first...)
	for _, e := range second {
		e.Seq = uint32(len(want))
		if e.Kind == KindSample {
			e.Addr++
		}
		want = append(want, e)
	}
	for _, e := range third {
		e.Seq = uint32(len(want))
		want = append(want, e)
	}
	requireEvents(t, keyOrder(want), collect(t, db, Query{Run: run.ID}), "spooled after added")
	r, err := db.Run(run.ID)
	require.NoError(t, err)
	require.Equal(t, uint64(len(want)), r.Events)
}

// A spool file damaged under it — cut short, a value past the bound —
// is refused naming the spool and the event.
func TestCopySpoolRefusesADamagedFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string)
		want   string
	}{
		{"cut", func(t *testing.T, path string) { require.NoError(t, os.Truncate(path, 100)) }, "event 2 of 50: unexpected EOF"},
		{"huge value", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte{0xff, 0xff, 0xff, 0x7f}, 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, "event 0 of 50: a value of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "spool")
			s, err := NewSpool(path)
			require.NoError(t, err)
			defer s.Close()
			evs := genEvents(4, 50, 2)
			for i := range evs {
				require.NoError(t, s.Add(&evs[i]))
			}
			require.NoError(t, s.w.Flush())
			tc.damage(t, path)
			db, err := Open(filepath.Join(dir, "db"), nil)
			require.NoError(t, err)
			defer db.Close()
			_, in, err := db.NewRun("test.tape", testProbes, "")
			require.NoError(t, err)
			defer in.Close()
			err = in.CopySpool(s, nil, nil)
			require.ErrorContains(t, err, "spool "+path)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
