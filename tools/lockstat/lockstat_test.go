package lockstat_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/tooltest"
	"github.com/reprise-vm/reprise/tools/lockstat"
)

// On syn_cont, lockstat's acquisitions and contended acquisitions equal
// what every lock counted itself, and the report has the shape of InSight's
// Table 3: the two level-2 locks the most contended, blocking far more
// often than the level-1 locks, and changing owner more often.
func TestSynContMatchesGroundTruth(t *testing.T) {
	r := tooltest.Replay(t, "syn_cont", tooltest.Options{Probes: guest.LockProbes})
	rep, err := lockstat.Build(r.DB, lockstat.Options{})
	require.NoError(t, err)
	byAddr := map[uint64]*lockstat.Lock{}
	for _, l := range rep.Locks {
		byAddr[l.Addr] = l
	}
	type level struct{ acquired, contended, owners uint64 }
	levels := map[string]*level{"L1": {}, "L2": {}}
	for _, tr := range r.Truths {
		if tr["lock"] == "" {
			continue
		}
		addr, err := strconv.ParseUint(strings.TrimPrefix(tr["addr"], "0x"), 16, 64)
		require.NoError(t, err)
		l := byAddr[addr]
		require.NotNil(t, l, "lock %s at %#x missing from the report", tr["lock"], addr)
		require.Equal(t, tr["acquired"], strconv.FormatUint(l.Acquired, 10), "lock %s acquisitions", tr["lock"])
		require.Equal(t, tr["contended"], strconv.FormatUint(l.Contended, 10), "lock %s contended", tr["lock"])
		require.Equal(t, "worker", strings.Split(l.FirstSite, "+")[0])
		lv := levels[tr["lock"][:2]]
		lv.acquired += l.Acquired
		lv.contended += l.Contended
		lv.owners += l.OwnerChanges
	}
	require.Len(t, byAddr, 10)
	l1, l2 := levels["L1"], levels["L2"]
	blocked := func(l *level) float64 { return float64(l.contended) / float64(l.acquired) }
	t.Logf("level 1: %.1f%% blocked, %.1f%% owner changes; level 2: %.1f%% blocked, %.1f%% owner changes",
		100*blocked(l1), 100*float64(l1.owners)/float64(l1.acquired), 100*blocked(l2), 100*float64(l2.owners)/float64(l2.acquired))
	// Eight threads share each level-2 lock, two each level-1 lock; with
	// ten iterations a thread, how much more often is timing (measured
	// 2.3–4.5× across loaded runs), that it is more often is not.
	require.Greater(t, blocked(l2), blocked(l1), "level-2 locks block more often")
	require.Greater(t, l2.owners*l1.acquired, l1.owners*l2.acquired, "level-2 locks change owner more often")
	for _, l := range rep.Locks[:2] {
		require.Equal(t, 8, l.Threads, "the two most contended locks are the level-2 ones")
	}
	for _, th := range rep.Threads {
		require.Equal(t, 2, th.Locks)
		require.Equal(t, uint64(20), th.Acquired, "thread %d: 10 iterations, 2 locks", th.ID)
	}

	// The same through --sort and --top, and JSON.
	top, err := lockstat.Build(r.DB, lockstat.Options{Sort: lockstat.ByLocked, Top: 3})
	require.NoError(t, err)
	require.Len(t, top.Locks, 3)
	require.Equal(t, []uint64{80, 80, 20}, []uint64{top.Locks[0].Acquired, top.Locks[1].Acquired, top.Locks[2].Acquired})
	var b bytes.Buffer
	require.NoError(t, rep.Write(&b))
	require.Contains(t, b.String(), "level2")
	var back lockstat.Report
	b.Reset()
	require.NoError(t, json.NewEncoder(&b).Encode(rep))
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	require.Equal(t, rep.Total.Contended, back.Total.Contended)

	_, err = lockstat.Build(r.DB, lockstat.Options{Sort: "bogus"})
	require.ErrorContains(t, err, "unknown sort key")
	_, err = lockstat.Build(r.DB, lockstat.Options{Run: 99})
	require.Error(t, err)
}
