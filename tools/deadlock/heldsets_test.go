package deadlock_test

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/internal/tooltest"
	"github.com/reprise-vm/reprise/tools/deadlock"
)

// Lock addresses of the scripted runs, named by symbols.
const lockG, lockL1, lockL2, lockL3 = 0x47c000, 0x47c020, 0x47c040, 0x47c060

var lockSyms = []eventdb.Symbol{
	{Name: "G", Addr: lockG, Size: 32}, {Name: "L1", Addr: lockL1, Size: 32},
	{Name: "L2", Addr: lockL2, Size: 32}, {Name: "L3", Addr: lockL3, Size: 32},
}

// nest is thread taking locks nested, in order, then releasing them.
func nest(thread uint32, locks ...uint64) []tooltest.LockStep {
	var out []tooltest.LockStep
	for _, l := range locks {
		out = append(out, tooltest.LockStep{Thread: thread, Lock: l})
	}
	for i := len(locks) - 1; i >= 0; i-- {
		out = append(out, tooltest.LockStep{Thread: thread, Lock: locks[i], Release: true})
	}
	return out
}

// The locks held at a step are every lock its thread holds when it asks
// for the next one, taken before or after its held lock: a cycle whose
// steps share one is protected, and the report names the threads that
// hold the gate when not all of them do.
func TestHeldSets(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threads   [][]uint64 // thread i+1's nested locks
		deadlocks []string
		protected []string
		gate      string
		holders   []uint32
		why       string // the protected cycle's reason in the report
	}{{
		// T3 does not hold G: T1 and T2 alone keep the cycle apart.
		name:      "partial gate",
		threads:   [][]uint64{{lockG, lockL1, lockL2}, {lockG, lockL2, lockL3}, {lockL3, lockL1}},
		protected: []string{"L1@1>L2@1>L2@2>L3@2>L3@3>L1@3>L1@1"},
		gate:      "G", holders: []uint32{1, 2},
		why: "cannot happen, threads 1 and 2 hold G when they ask for their next lock\n",
	}, {
		// G is taken after each thread's first lock, yet held when it
		// asks for the second: L1 <-> L2 is protected, while G itself
		// closes two real cycles.
		name:      "gate taken between",
		threads:   [][]uint64{{lockL1, lockG, lockL2}, {lockL2, lockG, lockL1}},
		deadlocks: []string{"G@1>L2@1>L2@2>G@2>G@1", "G@2>L1@2>L1@1>G@1>G@2"},
		protected: []string{"L1@1>L2@1>L2@2>L1@2>L1@1"},
		gate:      "G", holders: []uint32{1, 2},
		why: "cannot happen, every thread in it holds G when it asks for its next lock\n",
	}, {
		// deadlock_goodlock's pattern: the chain through thread 1 asks
		// threads 1 and 2 to hold L1 at once and is no cycle.
		name:      "chain sharing its own lock",
		threads:   [][]uint64{{lockL1, lockL2}, {lockL1, lockL2, lockL3}, {lockL3, lockG}, {lockG, lockL1}},
		deadlocks: []string{"G@4>L1@4>L1@2>L3@2>L3@3>G@3>G@4"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := eventdb.Open(t.TempDir(), nil)
			require.NoError(t, err)
			defer db.Close()
			var steps []tooltest.LockStep
			for i, locks := range tc.threads {
				steps = append(steps, nest(uint32(i+1), locks...)...)
			}
			run := tooltest.ScriptedLockRun(t, db, lockSyms, steps)
			rep, err := deadlock.Build(db, deadlock.Options{Run: run.ID})
			require.NoError(t, err)
			tid := func(t uint32) string { return strconv.FormatUint(uint64(t), 10) }
			var got struct{ deadlocks, protected []string }
			for _, c := range rep.Deadlocks {
				got.deadlocks = append(got.deadlocks, rotate(c.Notation(tid)))
			}
			for _, c := range rep.Protected {
				got.protected = append(got.protected, rotate(c.Notation(tid)))
				require.Equal(t, tc.gate, c.Gate.Name)
				require.Equal(t, tc.holders, c.Gate.Threads)
			}
			require.ElementsMatch(t, tc.deadlocks, got.deadlocks)
			require.Equal(t, tc.protected, got.protected)
			require.Empty(t, rep.TrySafe)
			var b bytes.Buffer
			require.NoError(t, rep.Write(&b))
			for _, c := range tc.protected {
				require.Contains(t, b.String(), "protected by "+tc.gate+": cycle "+c+" "+tc.why)
			}
		})
	}
}
