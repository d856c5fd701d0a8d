package deadlock_test

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/tooltest"
	"github.com/reprise-vm/reprise/tools/deadlock"
)

// rotate turns a cycle written L1@T1>L2@T1>…>L1@T1 into its canonical
// form, starting at its smallest (lock, thread) pair.
func rotate(cycle string) string {
	parts := strings.Split(cycle, ">")
	parts = parts[:len(parts)-1] // the last repeats the first
	best := 0
	for i := 0; i < len(parts); i += 2 {
		if parts[i] < parts[best] {
			best = i
		}
	}
	r := append(append([]string{}, parts[best:]...), parts[:best]...)
	return strings.Join(append(r, r[0]), ">")
}

// The tool finds the cycles the deadlock samples hold, names the gate
// lock of the gatelock sample, calls the trylock-only inversion safe,
// reports no chain whose steps would hold one lock at once (goodlock), and
// finds nothing in syn_cont, whose locks never nest.
func TestDeadlockSamples(t *testing.T) {
	for _, name := range []string{"deadlock_trylock", "deadlock_transitive", "deadlock_gatelock", "deadlock_goodlock"} {
		t.Run(name, func(t *testing.T) {
			r := tooltest.Replay(t, name, tooltest.Options{Probes: guest.LockProbes})
			rep, err := deadlock.Build(r.DB, deadlock.Options{})
			require.NoError(t, err)
			threadName := map[uint32]string{}
			var want struct{ cycles, protected, none []string }
			var gate string
			for _, tr := range r.Truths {
				if id, ok := tr["tid"]; ok {
					n, err := strconv.ParseUint(id, 10, 32)
					require.NoError(t, err)
					threadName[uint32(n)] = tr["thread"]
				}
				switch tr["expect"] {
				case "cycle":
					want.cycles = append(want.cycles, rotate(tr["cycle"]))
				case "protected":
					want.protected = append(want.protected, rotate(tr["cycle"]))
					gate = tr["gate"]
				case "none":
					if c := tr["cycle"]; c != "" {
						want.none = append(want.none, rotate(c))
					}
				}
			}
			tname := func(t uint32) string { return threadName[t] }
			var got struct{ cycles, protected []string }
			for _, c := range rep.Deadlocks {
				got.cycles = append(got.cycles, rotate(c.Notation(tname)))
			}
			for _, c := range rep.Protected {
				got.protected = append(got.protected, rotate(c.Notation(tname)))
				require.Equal(t, gate, c.Gate.Name)
			}
			require.Equal(t, want.cycles, got.cycles)
			require.Equal(t, want.protected, got.protected)
			for _, c := range slices.Concat(rep.Deadlocks, rep.Protected, rep.TrySafe) {
				require.NotContains(t, want.none, rotate(c.Notation(tname)), "a chain the sample says cannot happen is reported")
			}
			if name == "deadlock_trylock" {
				require.Len(t, rep.TrySafe, 1, "T4 takes L3 by trylock: no deadlock")
				require.Equal(t, "L3@T3>L4@T3>L4@T4>L3@T4>L3@T3", rotate(rep.TrySafe[0].Notation(tname)))
			} else {
				require.Empty(t, rep.TrySafe)
			}
			var b bytes.Buffer
			require.NoError(t, rep.Write(&b))
			for _, c := range rep.Deadlocks {
				for _, s := range c.Steps {
					require.NotContains(t, s.HoldsAt, "0x4", "acquisition sites resolve to symbols")
				}
			}
		})
	}
	t.Run("syn_cont", func(t *testing.T) {
		r := tooltest.Replay(t, "syn_cont iters=20 work=8000", tooltest.Options{Probes: guest.LockProbes})
		rep, err := deadlock.Build(r.DB, deadlock.Options{})
		require.NoError(t, err)
		require.Empty(t, rep.Deadlocks)
		require.Empty(t, rep.Protected)
		require.Empty(t, rep.TrySafe)
		require.Zero(t, rep.Nested, "syn_cont never holds two locks")
		require.Equal(t, 16, rep.Threads)
		require.Equal(t, 10, rep.Locks)
	})
}
