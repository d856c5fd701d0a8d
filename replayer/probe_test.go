package replayer_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/vmm"
)

// Probes at the entries of mutex_lock and mutex_unlock see
// exactly the acquisitions syn_cont counted itself, lock by lock, and the
// probed replay still passes every check, its RAM hash included — with
// both sites patched to exit from CPL3, and with both int3, which sees
// the same hits at the same positions in the same order.
func TestProbesCountLockAcquisitions(t *testing.T) {
	img := kitImage(t)
	rec := record(t, img, "syn_cont iters=100 work=8000", recorder.Auto)
	require.NoError(t, rec.err)

	lock, ok := img.Lookup("mutex_lock")
	require.True(t, ok)
	unlock, ok := img.Lookup("mutex_unlock")
	require.True(t, ok)
	code := func(addr uint64, n int) []byte {
		for _, s := range img.Segments {
			if addr >= s.Addr && addr+uint64(n) <= s.Addr+uint64(len(s.Data)) {
				return s.Data[addr-s.Addr : addr-s.Addr+uint64(n)]
			}
		}
		t.Fatalf("no code at %#x", addr)
		return nil
	}
	// Both start with the register counter's count, which the probe
	// displaces and runs out of line: the count must come out the same.
	count := abi.CountCode[:]
	require.Equal(t, count, code(lock.Addr, len(count)), "mutex_lock should start with a count")
	require.Equal(t, count, code(unlock.Addr, len(count)), "mutex_unlock should start with a count")

	var sites []probes.Site
	for _, addr := range []uint64{lock.Addr, unlock.Addr} {
		s, err := probes.DecodeSite(img, addr)
		require.NoError(t, err)
		sites = append(sites, s)
	}
	type hit struct {
		addr, lock uint64
		pos        vmm.Position
	}
	hits := map[probes.Patch][]hit{}
	for _, how := range []probes.Patch{probes.PatchExit, probes.PatchInt3} {
		perLock := map[uint64]uint64{}
		var unlocks uint64
		res := replayProbed(t, rec.path, sites, how == probes.PatchInt3, func(h *replayer.ProbeHit, _ vmm.GuestMemory) error {
			hits[how] = append(hits[how], hit{h.Addr, h.Regs.RDI, h.Pos})
			switch h.Addr {
			case lock.Addr:
				perLock[h.Regs.RDI]++
			case unlock.Addr:
				unlocks++
			}
			return nil
		})
		var total uint64
		for _, tr := range guest.ParseTruth(rec.console) {
			if _, isLock := tr["lock"]; !isLock {
				continue
			}
			addr, err := strconv.ParseUint(tr["addr"], 0, 64)
			require.NoError(t, err)
			want, err := strconv.ParseUint(tr["acquired"], 10, 64)
			require.NoError(t, err)
			require.Equal(t, want, perLock[addr], "%v: lock %s at %#x", how, tr["lock"], addr)
			total += want
		}
		require.Equal(t, uint64(3200), total)
		require.Equal(t, total, unlocks, "%v: one unlock per acquisition", how)
		require.Equal(t, 2*total, res.Stats.ProbeHits, "%v", how)
		require.Equal(t, rec.res.End.RAMHash, res.End.RAMHash, "%v: probes left a trace in guest memory", how)
		require.Len(t, res.ProbeSites, 2)
		for _, ps := range res.ProbeSites {
			require.Equal(t, how, ps.Patch, "%s: %s", ps.Where, ps.Why)
			require.Equal(t, total, ps.Hits, ps.Where)
		}
	}
	require.Equal(t, hits[probes.PatchInt3], hits[probes.PatchExit], "exit and int3 patches see different hits")
}

func replayProbed(t *testing.T, path string, sites []probes.Site, int3Only bool, on replayer.ProbeHandler) *replayer.Result {
	t.Helper()
	var out bytes.Buffer
	res, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &out, Probes: sites, OnProbe: on, Int3Probes: int3Only})
	require.NoError(t, err, fmt.Sprintf("probed replay:\n%s", out.String()))
	return res
}

// The whole path: specs parsed and resolved against the image, hits
// attributed to guest threads, arguments evaluated. Per-lock counts match
// the workload's, and a thread filter sees exactly that thread's locks.
func TestProbePlanOnSynCont(t *testing.T) {
	img := kitImage(t)
	rec := record(t, img, "syn_cont iters=100 work=8000", recorder.Auto)
	require.NoError(t, rec.err)
	workers := guest.Select(guest.ParseTruth(rec.console), "thread", "0")
	require.Len(t, workers, 1, "syn_cont names its threads' tids")
	tid0 := workers[0]["tid"]

	specs, err := probes.ParseSpecs([]string{
		"lock=mutex_lock m=arg0",
		"t0lock=mutex_lock m=arg0 @tid=" + tid0,
	})
	require.NoError(t, err)
	plan, err := probes.Resolve(specs, img)
	require.NoError(t, err)
	require.Len(t, plan.Sites, 1, "two probes on one instruction share its site")

	perLock := map[uint64]uint64{}
	threads := map[uint32]bool{}
	var t0 uint64
	var out bytes.Buffer
	res, err := replayer.Replay(context.Background(), replayer.Options{Tape: rec.path, Console: &out, Plan: plan,
		OnHit: func(h replayer.Hit) error {
			require.NoError(t, h.Args[0].Err)
			switch h.Probe.Name {
			case "lock":
				perLock[h.Args[0].Value]++
				threads[h.Thread] = true
			case "t0lock":
				t0++
			}
			return nil
		}})
	require.NoError(t, err, out.String())
	require.Equal(t, rec.res.End.RAMHash, res.End.RAMHash)
	for _, tr := range guest.ParseTruth(rec.console) {
		if _, isLock := tr["lock"]; isLock {
			addr, _ := strconv.ParseUint(tr["addr"], 0, 64)
			require.Equal(t, tr["acquired"], strconv.FormatUint(perLock[addr], 10), "lock %s", tr["lock"])
		}
	}
	require.Len(t, threads, 16, "hits from all 16 worker threads")
	require.Equal(t, uint64(2*100), t0, "thread %s takes its level-1 and level-2 lock once per iteration", tid0)
}

// The guest kernel's trace ring reaches the event DB: every worker thread's
// creation and exit, and context switches between them.
func TestTraceRingIntoDB(t *testing.T) {
	img := kitImage(t)
	rec := record(t, img, "syn_cont iters=50 work=8000", recorder.Auto)
	require.NoError(t, rec.err)
	db, err := eventdb.Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer db.Close()
	var out bytes.Buffer
	_, run, err := replayer.ToDB(context.Background(), replayer.Options{Tape: rec.path, Console: &out}, db)
	require.NoError(t, err, out.String())
	require.True(t, run.Complete)
	count := func(k eventdb.Kind) (n int, threads map[uint64]bool) {
		threads = map[uint64]bool{}
		it := db.Query(eventdb.Query{Run: run.ID, Kinds: []eventdb.Kind{k}})
		defer it.Close()
		for it.Next() {
			n++
			threads[it.Event().Addr] = true
		}
		require.NoError(t, it.Err())
		return n, threads
	}
	workers := 0
	for _, tr := range guest.ParseTruth(rec.console) {
		if _, ok := tr["thread"]; ok {
			workers++
		}
	}
	require.Equal(t, 16, workers, "syn_cont names its 16 workers")
	created, newTIDs := count(eventdb.KindThreadCreate)
	exited, _ := count(eventdb.KindThreadExit)
	switches, _ := count(eventdb.KindSwitch)
	require.Equal(t, 17, created, "main plus 16 workers")
	require.Len(t, newTIDs, 17)
	require.Equal(t, 16, exited, "the workers exit; main ends the guest")
	require.Greater(t, switches, 16)
}

// A %return probe fires once per return: on syn_cont, exactly as often as
// the entry probe of the same function, and the replay stays faithful.
func TestReturnProbes(t *testing.T) {
	img := kitImage(t)
	rec := record(t, img, "syn_cont iters=50 work=8000", recorder.Auto)
	require.NoError(t, rec.err)
	specs, err := probes.ParseSpecs([]string{"lock=mutex_lock m=arg0", "done=mutex_lock%return"})
	require.NoError(t, err)
	plan, err := probes.Resolve(specs, img)
	require.NoError(t, err)
	counts := map[string]int{}
	var out bytes.Buffer
	res, err := replayer.Replay(context.Background(), replayer.Options{Tape: rec.path, Console: &out, Plan: plan,
		OnHit: func(h replayer.Hit) error { counts[h.Probe.Name]++; return nil }})
	require.NoError(t, err, out.String())
	require.Equal(t, 1600, counts["lock"])
	require.Equal(t, counts["lock"], counts["done"])
	require.Equal(t, rec.res.End.RAMHash, res.End.RAMHash)

	specs, err = probes.ParseSpecs([]string{"r=main_nosuch_caller%return"})
	if err == nil {
		_, err = probes.Resolve(specs, img)
	}
	require.Error(t, err)
}

// Trace records carry the exact position the kernel wrote them at: sorted
// by position with the probe hits of the same replay, every hit of a thread
// falls between a switch to that thread and the next switch away, and the
// record times never go backwards.
func TestTracePositionsOrderProbeHits(t *testing.T) {
	img := kitImage(t)
	rec := record(t, img, "syn_cont iters=50 work=8000", recorder.Auto)
	require.NoError(t, rec.err)
	specs, err := probes.ParseSpecs([]string{"lock=mutex_lock m=arg0"})
	require.NoError(t, err)
	plan, err := probes.Resolve(specs, img)
	require.NoError(t, err)
	db, err := eventdb.Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer db.Close()
	var out bytes.Buffer
	_, run, err := replayer.ToDB(context.Background(), replayer.Options{Tape: rec.path, Console: &out, Plan: plan}, db)
	require.NoError(t, err, out.String())

	var evs []*eventdb.Event
	it := db.Query(eventdb.Query{Run: run.ID, Kinds: []eventdb.Kind{eventdb.KindSwitch, eventdb.KindProbeEntry}})
	for it.Next() {
		evs = append(evs, it.Event().Clone())
	}
	require.NoError(t, it.Err())
	it.Close()
	// A switch and a hit at one position: the switch came first (the
	// kernel runs no counted code between them). Switches at one position
	// (a thread switched in that blocks before its next count, frequent
	// where only loop heads and calls count) keep their arrival order.
	slices.SortStableFunc(evs, func(a, b *eventdb.Event) int {
		if c := a.Pos.Compare(b.Pos); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Kind, a.Kind); c != 0 { // KindSwitch > KindProbeEntry
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	require.Greater(t, eventdb.KindSwitch, eventdb.KindProbeEntry)
	var running uint64
	hits, switches := 0, 0
	for i, e := range evs {
		switch e.Kind {
		case eventdb.KindSwitch:
			if switches == 0 {
				running = uint64(e.Thread) // main starts without a switch
			}
			require.Equal(t, running, uint64(e.Thread), "switch %v leaves a thread that was not running", e)
			running = e.Addr
			switches++
		case eventdb.KindProbeEntry:
			require.Equal(t, running, uint64(e.Thread), "hit %v while thread %d ran", e, running)
			hits++
		}
		if i > 0 {
			require.GreaterOrEqual(t, e.Time, evs[i-1].Time, "record time goes backwards at %v", e)
		}
	}
	require.Equal(t, 1600, hits, "16 workers, 50 iterations, 2 locks each")
	require.Greater(t, switches, 16)
}

// One replay patches some sites with exits and keeps int3 where an exit
// cannot go — here mutex_unlock's 1-byte ret, too short and followed by
// nothing that must run after it — and sees exactly the hits, at the
// same positions, that a replay with int3 everywhere sees.
func TestExitAndInt3SitesTogether(t *testing.T) {
	img := openKit(t, (*guest.Kit).HookImage) // its mutex_unlock ends in a 1-byte ret
	rec := record(t, img, "syn_cont iters=50 work=8000", recorder.Auto)
	require.NoError(t, rec.err)
	unlock, ok := img.Lookup("mutex_unlock")
	require.True(t, ok)
	var retOff uint64
	for off := uint64(0); ; {
		s, err := probes.DecodeSite(img, unlock.Addr+off)
		require.NoError(t, err)
		if s.Branch == probes.BranchRet && s.Len == 1 {
			retOff = off
			break
		}
		off += uint64(s.Len)
		require.Less(t, off, unlock.Size, "mutex_unlock has no 1-byte ret")
	}
	specs, err := probes.ParseSpecs([]string{"lock=mutex_lock m=arg0", fmt.Sprintf("fast=mutex_unlock+%d", retOff), "done=mutex_lock%return"})
	require.NoError(t, err)
	plan, err := probes.Resolve(specs, img)
	require.NoError(t, err)

	type hit struct {
		name   string
		thread uint32
		pos    vmm.Position
	}
	replay := func(int3Only bool) ([]hit, *replayer.Result) {
		var hits []hit
		var out bytes.Buffer
		res, err := replayer.Replay(context.Background(), replayer.Options{Tape: rec.path, Console: &out, Plan: plan, Int3Probes: int3Only,
			OnHit: func(h replayer.Hit) error { hits = append(hits, hit{h.Probe.Name, h.Thread, h.Pos}); return nil }})
		require.NoError(t, err, out.String())
		require.Equal(t, rec.res.End.RAMHash, res.End.RAMHash)
		return hits, res
	}
	mixed, res := replay(false)
	patched := map[probes.Patch]int{}
	for _, s := range res.ProbeSites {
		patched[s.Patch]++
		if s.Where == fmt.Sprintf("mutex_unlock+%#x", retOff) {
			require.Equal(t, probes.PatchInt3, s.Patch)
			require.Contains(t, s.Why, "1-byte ret")
			require.NotZero(t, s.Hits, "the uncontended unlock returns there")
		}
	}
	require.NotZero(t, patched[probes.PatchExit], "mutex_lock and the returns from it exit")
	require.Equal(t, 1, patched[probes.PatchInt3])
	int3s, _ := replay(true)
	require.Equal(t, int3s, mixed)
}
