package eventdb

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	const threads = 16
	dir := t.TempDir()
	db, err := Open(dir, &Options{BatchEvents: 10000})
	require.NoError(t, err)
	// The reopen subtest replaces db: close the one open at the end, or
	// its background compactions race the removal of dir.
	defer func() { _ = db.Close() }()

	evs1 := genEvents(1, 200_000, threads)
	evs2 := genEvents(2, 50_000, threads)
	run1 := ingest(t, db, evs1)
	run2 := ingest(t, db, evs2)
	require.Equal(t, uint32(1), run1.ID)
	require.Equal(t, uint32(2), run2.ID)
	require.True(t, run1.Complete)
	require.Equal(t, uint64(len(evs1)), run1.Events)

	sorted1 := keyOrder(evs1)

	t.Run("all", func(t *testing.T) {
		requireEvents(t, sorted1, collect(t, db, Query{Run: 1}), "run 1")
		requireEvents(t, keyOrder(evs2), collect(t, db, Query{Run: 2}), "run 2")
	})

	t.Run("kind and thread", func(t *testing.T) {
		for _, k := range Kinds()[:KindUser] { // the kinds genEvents makes
			requireEvents(t, filter(sorted1, func(e *Event) bool { return e.Kind == k }),
				collect(t, db, Query{Run: 1, Kinds: []Kind{k}}), k.String())
			for th := uint32(0); th < threads; th++ {
				want := filter(sorted1, func(e *Event) bool { return e.Kind == k && e.Thread == th })
				require.NotEmpty(t, want)
				requireEvents(t, want, collect(t, db, Query{Run: 1, Kinds: []Kind{k}, Thread: &th}), k.String())
			}
		}
	})

	t.Run("thread, every kind", func(t *testing.T) {
		th := uint32(5)
		requireEvents(t, filter(sorted1, func(e *Event) bool { return e.Thread == th }),
			collect(t, db, Query{Run: 1, Thread: &th}), "thread 5")
	})

	t.Run("several kinds", func(t *testing.T) {
		// Given out of order and with a duplicate: results still come in key order, once.
		q := Query{Run: 1, Kinds: []Kind{KindProbeReturn, KindProbeEntry, KindProbeReturn}}
		requireEvents(t, filter(sorted1, func(e *Event) bool { return e.Kind == KindProbeEntry || e.Kind == KindProbeReturn }),
			collect(t, db, q), "probe kinds")
	})

	t.Run("time range", func(t *testing.T) {
		from, to := evs1[50_000].Time, evs1[120_000].Time
		requireEvents(t, filter(sorted1, func(e *Event) bool { return e.Time >= from && e.Time < to }),
			collect(t, db, Query{Run: 1, From: from, To: to}), "from-to")
		requireEvents(t, filter(sorted1, func(e *Event) bool { return e.Time >= from }),
			collect(t, db, Query{Run: 1, From: from}), "from only")
		th := uint32(3)
		requireEvents(t, filter(sorted1, func(e *Event) bool { return e.Kind == KindSample && e.Thread == th && e.Time < to }),
			collect(t, db, Query{Run: 1, Kinds: []Kind{KindSample}, Thread: &th, To: to}), "to only, kind and thread")
	})

	t.Run("addr and probe", func(t *testing.T) {
		addr := testProbes[2].Addr
		want := filter(sorted1, func(e *Event) bool { return e.Addr == addr })
		require.NotEmpty(t, want)
		requireEvents(t, want, collect(t, db, Query{Run: 1, Addr: &addr}), "addr")

		want = filter(sorted1, func(e *Event) bool { return e.Kind == KindProbeEntry && e.Probe == 4 })
		require.NotEmpty(t, want)
		requireEvents(t, want, collect(t, db, Query{Run: 1, Kinds: []Kind{KindProbeEntry}, Probe: ptr(uint32(4))}), "probe")

		got := collect(t, db, Query{Run: 1, Addr: ptr(uint64(0xdead_beef_0000))})
		require.Empty(t, got)
	})

	t.Run("runs are independent", func(t *testing.T) {
		for _, q := range []Query{{Run: 1}, {Run: 1, Kinds: []Kind{KindSample}}, {Run: 1, Thread: ptr(uint32(0))}} {
			it := db.Query(q)
			for it.Next() {
				e := it.Event()
				// Seq < 200k and every event equals one of run 1's.
				require.Less(t, int(e.Seq), len(evs1))
				require.True(t, eventEqual(&evs1[e.Seq], e), "event %v is not run 1's", e)
			}
			require.NoError(t, it.Close())
		}
	})

	t.Run("runs listed", func(t *testing.T) {
		runs, err := db.Runs()
		require.NoError(t, err)
		require.Len(t, runs, 2)
		require.Equal(t, *run1, runs[0])
		require.Equal(t, *run2, runs[1])
		require.True(t, runs[0].Complete)
		require.Equal(t, uint64(200_000), runs[0].Events)
		require.True(t, runs[1].Complete)
		require.Equal(t, uint64(50_000), runs[1].Events)
		require.Equal(t, testProbes, runs[0].Probes)
		r, err := db.Run(2)
		require.NoError(t, err)
		require.Equal(t, *run2, r)
	})

	t.Run("reopen", func(t *testing.T) {
		require.NoError(t, db.Close())
		db, err = Open(dir, nil)
		require.NoError(t, err)
		requireEvents(t, keyOrder(evs2), collect(t, db, Query{Run: 2}), "run 2 after reopen")
		run, in, err := db.NewRun("t", nil, "")
		require.NoError(t, err)
		require.Equal(t, uint32(3), run.ID)
		require.NoError(t, in.Finish())
	})
}

func TestErrors(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	require.NoError(t, err)

	_, err = db.Run(7)
	require.ErrorIs(t, err, ErrNoRun)
	require.ErrorContains(t, err, "run 7")

	it := db.Query(Query{Run: 7})
	require.False(t, it.Next())
	require.ErrorIs(t, it.Err(), ErrNoRun)
	require.ErrorIs(t, it.Close(), ErrNoRun)

	_, _, err = db.NewRun("t", []Probe{{ID: 1}, {ID: 1}}, "")
	require.ErrorContains(t, err, "used twice")
	_, _, err = db.NewRun("t", []Probe{{ID: 0}}, "")
	require.Error(t, err)

	run, in, err := db.NewRun("t", nil, "")
	require.NoError(t, err)
	require.Equal(t, uint32(1), run.ID, "a refused NewRun uses no id")
	require.ErrorContains(t, in.Add(&Event{Kind: 0}), "unknown kind")
	require.ErrorContains(t, in.Add(&Event{Kind: 99}), "unknown kind")
	require.NoError(t, in.Add(&Event{Kind: KindUser}))
	in.SetNote("diverged at event 12")
	require.NoError(t, in.Finish())
	require.ErrorIs(t, in.Add(&Event{Kind: KindUser}), ErrFinished)
	require.ErrorIs(t, in.Finish(), ErrFinished)
	require.NoError(t, in.Close(), "Close after Finish does nothing")
	r, err := db.Run(1)
	require.NoError(t, err)
	require.Equal(t, "diverged at event 12", r.Note)
	require.Equal(t, uint64(1), r.Events)

	// Close without Finish: buffered events are committed, the run stays incomplete.
	_, in, err = db.NewRun("t", nil, "")
	require.NoError(t, err)
	for range 10 {
		require.NoError(t, in.Add(&Event{Kind: KindSample, Addr: 1}))
	}
	require.NoError(t, in.Close())
	r, err = db.Run(2)
	require.NoError(t, err)
	require.False(t, r.Complete)
	require.Equal(t, uint64(10), r.Events)
	require.Len(t, collect(t, db, Query{Run: 2}), 10)

	require.NoError(t, db.Close())
	require.ErrorIs(t, db.Close(), ErrClosed)
	_, err = db.Runs()
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, db.Query(Query{Run: 1}).Err(), ErrClosed)
	_, _, err = db.NewRun("t", nil, "")
	require.ErrorIs(t, err, ErrClosed)
}

func TestKindNames(t *testing.T) {
	for _, k := range append(Kinds(), 99, 255) {
		got, err := ParseKind(k.String())
		require.NoError(t, err)
		require.Equal(t, k, got)
	}
	for _, s := range []string{"", "kind(0)", "kind(256)", "kind(07)", "Sample", "kind(3)"} {
		_, err := ParseKind(s)
		require.Error(t, err, s)
	}
	require.Equal(t, "kind(99)", Kind(99).String())
}

func TestEmptyRunAndTimeZero(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer db.Close()
	run, in, err := db.NewRun("", nil, "")
	require.NoError(t, err)
	require.NoError(t, in.Finish())
	require.Empty(t, collect(t, db, Query{Run: run.ID}))
	r, err := db.Run(run.ID)
	require.NoError(t, err)
	require.True(t, r.Complete)
	require.Zero(t, r.Events)

	// A negative time (an event before the recording's start clock) survives.
	evs := []Event{{Kind: KindUser, Time: -time.Second, Args: []uint64{^uint64(0)}}}
	ingest(t, db, evs)
	requireEvents(t, evs, collect(t, db, Query{Run: 2}), "negative time")
	require.False(t, errors.Is(nil, ErrNoRun))
}

// TestQueryRanges pins which key ranges a query scans.
func TestQueryRanges(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer db.Close()
	_, in, err := db.NewRun("t", nil, "")
	require.NoError(t, err)
	require.NoError(t, in.Finish())

	th := uint32(7)
	for _, tc := range []struct {
		q    Query
		want [][2][]byte
	}{
		{Query{Run: 1, Kinds: []Kind{KindSample}, Thread: &th}, [][2][]byte{{
			{'e', 0, 0, 0, 1, 3, 0, 0, 0, 7}, {'e', 0, 0, 0, 1, 3, 0, 0, 0, 8}}}},
		{Query{Run: 1, Kinds: []Kind{KindSwitch, KindSample}}, [][2][]byte{
			{{'e', 0, 0, 0, 1, 3}, {'e', 0, 0, 0, 1, 4}},
			{{'e', 0, 0, 0, 1, 4}, {'e', 0, 0, 0, 1, 5}}}},
		{Query{Run: 1}, [][2][]byte{{{'e', 0, 0, 0, 1}, {'e', 0, 0, 0, 2}}}},
	} {
		it := db.Query(tc.q)
		require.Equal(t, tc.want, it.ranges)
		require.NoError(t, it.Close())
	}
	it := db.Query(Query{Run: 1, Thread: &th})
	require.Len(t, it.ranges, len(Kinds()))
	require.NoError(t, it.Close())
}

// TestPositionsBackwards: a thread whose positions go backwards within a
// batch (only that stream gets a real sort) still reads back in key order,
// across batches too.
func TestPositionsBackwards(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{BatchEvents: 64})
	require.NoError(t, err)
	defer db.Close()
	evs := genEvents(9, 1000, 3)
	for i := range evs {
		if evs[i].Thread == 1 {
			evs[i].Pos = Position{Exit: uint64(1000 - i), Branch: uint64(i % 7)}
		}
	}
	ingest(t, db, evs)
	requireEvents(t, keyOrder(evs), collect(t, db, Query{Run: 1}), "run 1")
}
