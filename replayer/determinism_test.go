package replayer_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

// replays is how many times each recording is replayed (DESIGN: 20).
const replays = 20

// noisy keeps the other core busy for the duration of f: the recording
// then sees the host scheduling and interrupt timing a production host has.
func noisy(f func()) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		x := uint64(1)
		for !stop.Load() {
			for i := 0; i < 1<<16; i++ {
				x = x*6364136223846793005 + 1442695040888963407
			}
		}
		_ = x
	}()
	f()
	stop.Store(true)
	wg.Wait()
}

func kitImage(t *testing.T) *elffile.Image {
	t.Helper()
	return openKit(t, (*guest.Kit).Image)
}

// openKit builds the guest kit and opens one of its images.
func openKit(t *testing.T, which func(*guest.Kit) string) *elffile.Image {
	t.Helper()
	kvmtest.Require(t)
	k, err := guest.Build(context.Background())
	require.NoError(t, err)
	img, err := elffile.OpenImage(which(k))
	require.NoError(t, err)
	return img
}

type recording struct {
	path    string
	console string
	res     *recorder.Result
	err     error
}

func record(t *testing.T, img *elffile.Image, cmdline string, source tape.PositionSource) recording {
	t.Helper()
	return recordWithDisk(t, img, cmdline, source, "")
}

// recordWithDisk records with a disk whose base image is diskBase ("": none).
func recordWithDisk(t *testing.T, img *elffile.Image, cmdline string, source tape.PositionSource, diskBase string) recording {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.tape")
	var out bytes.Buffer
	var res *recorder.Result
	var err error
	noisy(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err = recorder.Record(ctx, recorder.Options{
			Image: img, Cmdline: cmdline, Output: path, Console: &out, PositionSource: source,
			TimerHz: 250, TimerJitter: 3 * time.Millisecond, DiskBase: diskBase,
		})
	})
	require.NotNil(t, res, "recording %q failed: %v", cmdline, err)
	// Each interrupt must be logged where a replay stops again: the hook
	// never exits away from its target, nor goes past one.
	require.Zero(t, res.Stats.SWBCStray, "recording %q: branch-counter exits away from the target", cmdline)
	require.Zero(t, res.Stats.SWBCMissed, "recording %q: branch-counter targets passed without an exit", cmdline)
	return recording{path: path, console: out.String(), res: res, err: err}
}

func replay(t *testing.T, path string) (string, *replayer.Result) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := replayer.Replay(ctx, replayer.Options{Tape: path, Console: &out})
	require.NoError(t, err, "replaying %s", path)
	return out.String(), res
}

// Every workload, recorded on a noisy host, replays 20 times with the
// recorded console output byte for byte, the same RAM hash and the same
// injected interrupts (each checked at its position by the replay itself).
func TestEveryWorkloadReplaysExactly(t *testing.T) {
	img := kitImage(t)
	args := map[string]string{
		"cpu": "digits=12000", "clock": "reads=2000000", "syn_cont": "iters=100 work=8000",
		"profile": "rounds=50", "shapes": "rounds=5000", "periodic": "count=10", "bench": "syscall n=200",
		"crash": "kind=null",
	}
	for _, w := range guest.Workloads() {
		if w.Name == "udp" {
			continue // needs senders: TestNetworkRecordReplay
		}
		t.Run(w.Name, func(t *testing.T) {
			cmdline := w.Name + " " + args[w.Name]
			var base string
			if w.Name == "disk" {
				base, _, _ = diskImage(t, 1)
			}
			rec := recordWithDisk(t, img, cmdline, recorder.Auto, base)
			require.NotNil(t, rec.res.End, "recording has no end")
			if w.Name == "crash" {
				require.Equal(t, tape.EndFault, rec.res.End.Reason)
			} else {
				require.NoError(t, rec.err)
				require.Equal(t, tape.EndExited, rec.res.End.Reason)
				require.Equal(t, uint32(0), rec.res.End.Status, "recorded run failed its own checks:\n%s", rec.console)
			}
			for i := 0; i < replays; i++ {
				console, res := replay(t, rec.path)
				require.Equal(t, rec.console, console, "replay %d console", i)
				require.Equal(t, rec.res.End.RAMHash, res.End.RAMHash, "replay %d RAM", i)
				require.Equal(t, rec.res.Stats.Injected, res.Stats.Injected, "replay %d injections", i)
				require.Equal(t, rec.res.Events, res.Events, "replay %d applied a different number of events", i)
			}
		})
	}
}

// The kit counting through the trace-pc hook (the counter Linux programs
// built with reprise cc keep) records and replays as exactly as the r15
// kit, sampling included, and at the same branch-dense workloads.
func TestTracePCKitReplaysExactly(t *testing.T) {
	img := openKit(t, (*guest.Kit).HookImage)
	for _, cmd := range []string{"syn_cont iters=100 work=8000", "branchy rounds=2", "profile rounds=50"} {
		t.Run(cmd, func(t *testing.T) {
			rec := record(t, img, cmd, recorder.Auto)
			require.NoError(t, rec.err)
			for i := 0; i < 3; i++ {
				var out bytes.Buffer
				var samples uint64
				res, err := replayer.Replay(context.Background(), replayer.Options{Tape: rec.path, Console: &out,
					SampleEvery: 20_000, OnSample: func(*replayer.Sample, vmm.GuestMemory) error { samples++; return nil }})
				require.NoError(t, err, "replay %d", i)
				require.Equal(t, rec.console, out.String())
				require.Equal(t, rec.res.End.RAMHash, res.End.RAMHash)
				require.NotZero(t, samples)
			}
		})
	}
}

// The same workload recorded twice on a noisy host sees interrupts at
// different points — the nondeterminism recording exists for — and each
// recording replays to its own outcome.
func TestRecordingsDifferButEachReplaysToItself(t *testing.T) {
	img := kitImage(t)
	a := record(t, img, "syn_cont iters=200 work=8000", recorder.Auto)
	b := record(t, img, "syn_cont iters=200 work=8000", recorder.Auto)
	require.NoError(t, a.err)
	require.NoError(t, b.err)
	require.NotEqual(t, interruptPositions(t, a.path), interruptPositions(t, b.path),
		"two noisy recordings placed every interrupt identically")
	for _, rec := range []recording{a, b} {
		console, res := replay(t, rec.path)
		require.Equal(t, rec.console, console)
		require.Equal(t, rec.res.End.RAMHash, res.End.RAMHash)
	}
}

func interruptPositions(t *testing.T, path string) []tape.Position {
	r, err := tape.Open(path)
	require.NoError(t, err)
	defer r.Close()
	var ps []tape.Position
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		if ev.Kind == tape.KindInterrupt {
			ps = append(ps, ev.Pos)
		}
	}
	require.NotEmpty(t, ps)
	return ps
}

func TestExitSyncPositionsReplay(t *testing.T) {
	img := kitImage(t)
	for _, cmd := range []string{"syn_cont iters=50 work=8000", "deadlock_trylock", "selftest"} {
		rec := record(t, img, cmd, tape.SourceExitSync)
		require.NoError(t, rec.err)
		console, res := replay(t, rec.path)
		require.Equal(t, rec.console, console)
		require.Equal(t, rec.res.End.RAMHash, res.End.RAMHash)
	}
}

// A replay given the image it would decode from the tape uses it as is,
// and refuses any other.
func TestReplayImageFromTheCaller(t *testing.T) {
	img := kitImage(t)
	rec := record(t, img, "hello", recorder.Auto)
	require.NoError(t, rec.err)
	tapeRec, err := replayer.OpenRecording(rec.path)
	require.NoError(t, err)
	defer tapeRec.Close()
	tapeImg, err := tapeRec.Image()
	require.NoError(t, err)
	var out bytes.Buffer
	res, err := replayer.Replay(context.Background(), replayer.Options{Tape: rec.path, Image: tapeImg, Console: &out})
	require.NoError(t, err)
	require.Equal(t, rec.res.End.RAMHash, res.End.RAMHash)
	require.Equal(t, rec.console, out.String())

	k, err := guest.Build(context.Background())
	require.NoError(t, err)
	plain, err := elffile.OpenImage(k.PlainImage())
	require.NoError(t, err)
	_, err = replayer.Replay(context.Background(), replayer.Options{Tape: rec.path, Image: plain, Console: &out})
	require.ErrorContains(t, err, "is not the image recorded in")
}

// A flipped byte anywhere in the events is caught (the chunk's CRC) —
// never a silently different replay.
func TestFlippedByteIsReported(t *testing.T) {
	img := kitImage(t)
	rec := record(t, img, "syn_cont iters=50 work=8000", recorder.Auto)
	raw, err := os.ReadFile(rec.path)
	require.NoError(t, err)
	hdrEnd := headerBytes(t, rec.path)
	for _, off := range []int{hdrEnd + 20, hdrEnd + (len(raw)-hdrEnd)/2, len(raw) - 3} {
		bad := append([]byte(nil), raw...)
		bad[off] ^= 0x40
		path := filepath.Join(t.TempDir(), "bad-"+strconv.Itoa(off)+".tape")
		require.NoError(t, os.WriteFile(path, bad, 0o644))
		var out bytes.Buffer
		_, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &out})
		require.Error(t, err, "flip at %d went unnoticed", off)
		require.True(t, tape.IsDamaged(err), "flip at %d: want a corruption report, got %v", off, err)
	}
}

// headerBytes is where the events start: the tape's size with no events.
func headerBytes(t *testing.T, path string) int {
	r, err := tape.Open(path)
	require.NoError(t, err)
	h := r.Header()
	r.Close()
	var buf bytes.Buffer
	w, err := tape.NewWriter(&buf, h)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Len()
}

// A forged tape — events re-encoded with valid checksums but one value
// changed — is caught by the replay's own checks as a divergence.
func TestForgedEventIsADivergence(t *testing.T) {
	img := kitImage(t)
	rec := record(t, img, "syn_cont iters=50 work=8000", recorder.Auto)
	forge := func(t *testing.T, change func(i int, ev *tape.Event) []*tape.Event) error {
		r, err := tape.Open(rec.path)
		require.NoError(t, err)
		defer r.Close()
		path := filepath.Join(t.TempDir(), "forged.tape")
		w, err := tape.Create(path, r.Header())
		require.NoError(t, err)
		changed := false
		for i := 0; ; i++ {
			ev, err := r.Next()
			if err != nil {
				break
			}
			evs := []*tape.Event{ev}
			if !changed {
				if forged := change(i, ev); forged != nil {
					evs, changed = forged, true
				}
			}
			for _, ev := range evs {
				require.NoError(t, w.Append(ev))
			}
		}
		require.NoError(t, w.Close())
		require.True(t, changed, "nothing to forge")
		_, err = replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &bytes.Buffer{}})
		return err
	}
	for name, change := range map[string]func(int, *tape.Event) []*tape.Event{
		"interrupt moved one branch later": func(i int, ev *tape.Event) []*tape.Event {
			if ev.Kind == tape.KindInterrupt && ev.Where == tape.AtBranch && i > 10 {
				ev.Pos.Branch++
				return []*tape.Event{ev}
			}
			return nil
		},
		"register digest": func(i int, ev *tape.Event) []*tape.Event {
			if ev.Kind == tape.KindInterrupt && i > 5 {
				ev.Digest ^= 1
				return []*tape.Event{ev}
			}
			return nil
		},
		"end state": func(i int, ev *tape.Event) []*tape.Event {
			if ev.Kind == tape.KindEnd {
				ev.End.RAMHash[0] ^= 1
				return []*tape.Event{ev}
			}
			return nil
		},
		// Frames with an interrupt that is not the NIC's, or more with one
		// NIC interrupt than an RX ring holds: refused before they are
		// collected, however many the tape lists.
		"frames with a timer tick": func(i int, ev *tape.Event) []*tape.Event {
			if ev.Kind != tape.KindInterrupt || i <= 5 {
				return nil
			}
			return []*tape.Event{ev, {Kind: tape.KindNetRX, Pos: ev.Pos, Where: ev.Where, HostTime: ev.HostTime, Data: []byte{1}}}
		},
		"frames beyond the ring": func(i int, ev *tape.Event) []*tape.Event {
			if ev.Kind != tape.KindInterrupt || i <= 5 {
				return nil
			}
			ev.Vector = abi.IRQBase + abi.IRQNIC
			evs := []*tape.Event{ev}
			for range abi.NICRing + 1 {
				evs = append(evs, &tape.Event{Kind: tape.KindNetRX, Pos: ev.Pos, Where: ev.Where, HostTime: ev.HostTime, Data: []byte{1}})
			}
			return evs
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := forge(t, change)
			var div *replayer.DivergenceError
			require.ErrorAs(t, err, &div)
			t.Log(div)
		})
	}
}

// Entropy is an input like any other: each recording draws its own random
// bits, and each replay gets exactly the ones its recording drew.
func TestEntropyIsRecorded(t *testing.T) {
	img := kitImage(t)
	random := func(console string) string {
		for _, tr := range guest.ParseTruth(console) {
			if v, ok := tr["random"]; ok {
				return v
			}
		}
		t.Fatalf("no random value in:\n%s", console)
		return ""
	}
	a := record(t, img, "hello", recorder.Auto)
	b := record(t, img, "hello", recorder.Auto)
	require.NotEqual(t, random(a.console), random(b.console))
	for _, rec := range []recording{a, b} {
		console, _ := replay(t, rec.path)
		require.Equal(t, random(rec.console), random(console))
	}
}
