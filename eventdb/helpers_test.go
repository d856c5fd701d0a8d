package eventdb

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testProbes is a probe table like the lock tools use.
var testProbes = []Probe{
	{ID: 1, Name: "mutex_lock", Spec: "mutex_lock args=rdi", Symbol: "mutex_lock", Addr: 0x401000, Args: []string{"lock"}},
	{ID: 2, Name: "mutex_lock:ret", Spec: "mutex_lock%return", Symbol: "mutex_lock", Addr: 0x401000, Return: true, Args: []string{"ret"}},
	{ID: 3, Name: "mutex_unlock", Spec: "mutex_unlock args=rdi", Symbol: "mutex_unlock", Addr: 0x401200, Args: []string{"lock"}},
	{ID: 4, Name: "futex_wait", Spec: "k:futex_wait args=rdi,rsi,rdx", Symbol: "futex_wait", Addr: 0xffffffff80012340, Args: []string{"uaddr", "val", "timeout"}},
}

// genEvents returns n events in arrival order: a realistic mix over
// threads 0..threads-1, positions strictly increasing per thread, time
// increasing, Seq set to the arrival ordinal (what the DB assigns).
func genEvents(seed uint64, n, threads int) []Event {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pos := make([]Position, threads)
	var now time.Duration
	evs := make([]Event, n)
	for i := range evs {
		t := r.IntN(threads)
		// Several events may share a position (a probe and a sample at one
		// exit): the DB keeps them apart by seq.
		if r.IntN(8) != 0 {
			if r.IntN(4) == 0 {
				pos[t].Exit += uint64(1 + r.IntN(3))
				pos[t].Branch = uint64(r.IntN(1000))
			} else {
				pos[t].Branch += uint64(1 + r.IntN(5000))
			}
		}
		now += time.Duration(50 + r.IntN(2000))
		e := Event{Thread: uint32(t), Pos: pos[t], Seq: uint32(i), Time: now}
		switch x := r.IntN(100); {
		case x < 40:
			e.Kind = KindSample
			user := r.IntN(3) != 0
			base := uint64(0xffffffff80000000)
			if user {
				base = 0x400000
			}
			e.Addr = base + uint64(r.IntN(1<<16))
			e.Stack = make([]uint64, 2+r.IntN(12))
			for j := range e.Stack {
				e.Stack[j] = base + uint64(r.IntN(1<<16))
			}
		case x < 65:
			p := testProbes[[]int{0, 2, 3}[r.IntN(3)]]
			e.Kind, e.Probe, e.Addr = KindProbeEntry, p.ID, p.Addr
			e.Args = make([]uint64, len(p.Args))
			for j := range e.Args {
				e.Args[j] = 0x7f0000001000 + uint64(r.IntN(64))*64
			}
		case x < 90:
			p := testProbes[1]
			e.Kind, e.Probe, e.Addr = KindProbeReturn, p.ID, p.Addr
			e.Args = []uint64{uint64(r.IntN(2))}
		case x < 95:
			e.Kind, e.Addr = KindSwitch, uint64(r.IntN(threads))
		case x < 98:
			e.Kind, e.Addr = KindUser, uint64(1+r.IntN(4))
			e.Args = make([]uint64, r.IntN(4))
			for j := range e.Args {
				e.Args[j] = r.Uint64()
			}
		case x < 99:
			e.Kind, e.Args = KindThreadCreate, []uint64{uint64(r.IntN(threads))}
		default:
			e.Kind = KindThreadExit
		}
		evs[i] = e
	}
	return evs
}

// keyOrder sorts events as the DB returns them.
func keyOrder(evs []Event) []Event {
	out := slices.Clone(evs)
	slices.SortFunc(out, func(a, b Event) int {
		return cmp.Or(
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Thread, b.Thread),
			a.Pos.Compare(b.Pos),
			cmp.Compare(a.Seq, b.Seq),
		)
	})
	return out
}

func filter(evs []Event, keep func(*Event) bool) []Event {
	var out []Event
	for i := range evs {
		if keep(&evs[i]) {
			out = append(out, evs[i])
		}
	}
	return out
}

// ingest stores evs as a new, finished run.
func ingest(t testing.TB, db *DB, evs []Event) *Run {
	t.Helper()
	run, in, err := db.NewRun("test.tape", testProbes, "swbc every 100000")
	require.NoError(t, err)
	for i := range evs {
		require.NoError(t, in.Add(&evs[i]))
	}
	require.NoError(t, in.Finish())
	return run
}

// collect runs q and returns copies of its events.
func collect(t testing.TB, db *DB, q Query) []Event {
	t.Helper()
	it := db.Query(q)
	var out []Event
	for it.Next() {
		out = append(out, *it.Event().Clone())
	}
	require.NoError(t, it.Close())
	return out
}

// requireEvents compares event lists without a 200k-line diff on failure.
func requireEvents(t testing.TB, want, got []Event, what string) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: event count", what)
	for i := range want {
		if !eventEqual(&want[i], &got[i]) {
			require.Equal(t, want[i], got[i], "%s: event %d", what, i)
		}
	}
}

func eventEqual(a, b *Event) bool {
	return a.Kind == b.Kind && a.Thread == b.Thread && a.Pos == b.Pos && a.Seq == b.Seq &&
		a.Time == b.Time && a.Probe == b.Probe && a.Addr == b.Addr &&
		slices.Equal(a.Args, b.Args) && slices.Equal(a.Stack, b.Stack)
}

func ptr[T any](v T) *T { return &v }
