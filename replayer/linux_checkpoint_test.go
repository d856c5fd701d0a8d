package replayer_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/internal/cprog"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/vmm"
)

// Checkpoints of Linux programs, taken by the recording: the program's
// threads, child process, pipe, written file and signal handler are in
// each, so a replay from any of them reaches the recorded end — the same
// RAM and console, the output from there on — and a replay from boot
// passes every one's check. With probes on the C library's mutex
// functions, returns included, a replay from a checkpoint sees exactly the
// hits a replay from boot sees from there on: the returns of the calls in
// progress at the checkpoint too.
func TestLinuxCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		name, cc string
		flags    []string
		object   string
	}{
		{"musl-static", "musl-gcc", []string{"-static", "-O1"}, ""},
		{"glibc-dynamic", "gcc", []string{"-O1", "-pthread"}, "@libc.so.6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := cprog.Build(t, tc.cc, "pipeline", tc.flags...)
			path, ck, rec, console := recordLinuxCheckpoints(t, bin, "pipeline", "40")
			require.Contains(t, console, "child 7 sigchld 1")
			n := len(rec.Checkpoints)
			require.GreaterOrEqual(t, n, 3, "checkpoints taken while recording")

			var out bytes.Buffer
			whole, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &out, Checkpoints: ck})
			require.NoError(t, err, "a replay from boot checks every checkpoint")
			require.Equal(t, console, out.String())
			// One without the file (nothing settles or reads the vCPU at
			// the checkpoints) runs as the recording did all the same.
			plain, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &bytes.Buffer{}})
			require.NoError(t, err, "a replay from boot without the checkpoint file")
			require.Equal(t, rec.End.RAMHash, plain.End.RAMHash)
			for _, i := range slices.Compact([]int{1, n / 2, n}) {
				var part bytes.Buffer
				res, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &part, Checkpoints: ck, Start: i})
				require.NoError(t, err, "from checkpoint %d of %d", i, n)
				require.Equal(t, rec.End.RAMHash, res.End.RAMHash, "from checkpoint %d", i)
				require.Equal(t, whole.End.ConsoleHash, res.End.ConsoleHash, "from checkpoint %d", i)
				require.True(t, strings.HasSuffix(console, part.String()), "from checkpoint %d: the output from there on", i)
			}

			// Hits as a replay from checkpoint start (0: boot) sees them, each
			// with the exit it comes after.
			type hit struct {
				exit uint64
				what string
			}
			hits := func(start int) []hit {
				specs, err := probes.ParseSpecs([]string{"lock=pthread_mutex_lock" + tc.object + " m=arg0",
					"locked=pthread_mutex_lock" + tc.object + "%return", "unlock=pthread_mutex_unlock" + tc.object})
				require.NoError(t, err)
				set, err := probes.NewSet(specs)
				require.NoError(t, err)
				var seen []hit
				res, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &bytes.Buffer{}, Set: set,
					Checkpoints: ck, Start: start,
					OnHit: func(h replayer.Hit) error {
						seen = append(seen, hit{h.Pos.Exit, fmt.Sprintf("%s %d %v %#x", h.Probe.Name, h.Thread, h.Pos, h.Regs.RIP)})
						return nil
					}})
				require.NoError(t, err, "probed, from checkpoint %d", start)
				require.Equal(t, rec.End.RAMHash, res.End.RAMHash, "probed, from checkpoint %d", start)
				return seen
			}
			all := hits(0)
			require.NotEmpty(t, all)
			// The first checkpoint taken while the threads take locks.
			start := slices.IndexFunc(rec.Checkpoints, func(c checkpoint.Summary) bool { return c.Pos.Exit > all[0].exit })
			require.True(t, start >= 0 && rec.Checkpoints[start].Pos.Exit < all[len(all)-1].exit, "no checkpoint among the lock calls")
			part := hits(start + 1)
			// A hit after exit N, before the next, is at exit N: the
			// checkpoint at exit N comes before it.
			var want []hit
			for _, h := range all {
				if h.exit >= rec.Checkpoints[start].Pos.Exit {
					want = append(want, h)
				}
			}
			require.NotEmpty(t, part)
			require.Less(t, len(part), len(all))
			require.Equal(t, want, part, "the hits from checkpoint %d on", start+1)
		})
	}
}

// A checkpoint set shared by many replays (a debugging session's, which
// opens the tape's file once and hashes a checkpoint's RAM the first time
// a replay starts from it): each replay from it ends as one from boot, the
// second from the same checkpoint too; the tape's file is only read. A
// replay that keeps checkpoints adds them to the set, numbered after the
// file's, in the run's order by place; a replay from one of them ends as
// recorded, and one to one (Until) ends there.
func TestCheckpointSet(t *testing.T) {
	bin := cprog.Build(t, "musl-gcc", "pipeline", "-static", "-O1")
	path, ck, rec, console := recordLinuxCheckpoints(t, bin, "pipeline", "40")
	n := len(rec.Checkpoints)
	require.GreaterOrEqual(t, n, 3)
	r, err := replayer.OpenRecording(path)
	require.NoError(t, err)
	defer r.Close()
	set, err := replayer.OpenCheckpointSet(r, ck, true)
	require.NoError(t, err)
	defer set.Close()
	require.Len(t, set.Checkpoints(), n)
	require.Equal(t, rec.Checkpoints[n-1].Pos, set.Checkpoints()[n-1].Pos)
	replay := func(o replayer.Options) (*replayer.Result, string, error) {
		var out bytes.Buffer
		o.Recording, o.Console, o.CheckpointSet = r, &out, set
		res, err := replayer.Replay(context.Background(), o)
		return res, out.String(), err
	}
	for _, i := range []int{n / 2, n, n / 2} {
		res, out, err := replay(replayer.Options{Start: i})
		require.NoError(t, err, "from checkpoint %d", i)
		require.Equal(t, rec.End.RAMHash, res.End.RAMHash, "from checkpoint %d", i)
		require.True(t, strings.HasSuffix(console, out), "from checkpoint %d: the output from there on", i)
	}
	_, _, err = replay(replayer.Options{CheckpointEvery: time.Millisecond})
	require.ErrorContains(t, err, "only started from")

	// Keep one at every other exit after the middle checkpoint, from it.
	mid := set.Checkpoints()[n/2-1]
	var asked []checkpoint.Summary
	var wrong []string
	res, _, err := replay(replayer.Options{Start: n / 2, KeepCheckpoint: func(prev *checkpoint.Summary, here checkpoint.Summary, cost, _ time.Duration) bool {
		switch {
		case len(set.Checkpoints()) > n != (cost > 0):
			wrong = append(wrong, fmt.Sprintf("at %+v: cost %v", here.Pos, cost))
		case prev == nil || prev.Events > here.Events:
			wrong = append(wrong, fmt.Sprintf("at %+v: the last before is %+v", here.Pos, prev))
		}
		asked = append(asked, here)
		return here.Stop == vmm.StopGuestExit && here.Pos.Exit%2 == 0 && len(asked) < 40
	}})
	require.NoError(t, err)
	require.Empty(t, wrong, "what taking the last took, once one was; the start, or a later checkpoint, before each")
	require.Equal(t, rec.End.RAMHash, res.End.RAMHash)
	require.Greater(t, asked[0].Events, mid.Events-1, "asked from the start on")
	taken, full := set.Taken()
	require.Empty(t, full)
	require.GreaterOrEqual(t, taken, 3)
	all := set.Checkpoints()
	require.Len(t, all, n+taken)
	own := all[n:]
	// Each later in the run than the one before, the start first (none
	// where the replay started: one is there); an idle kernel's stop at
	// one exit comes again with an interrupt applied.
	prev := mid
	for _, c := range own {
		require.Equal(t, uint64(0), c.Pos.Exit%2)
		require.True(t, c.Events > prev.Events || c.Pos.Exit > prev.Pos.Exit, "%+v after %+v", c, prev)
		prev = c
	}
	for _, i := range []int{n + 1, n + taken} {
		res, out, err := replay(replayer.Options{Start: i})
		require.NoError(t, err, "from the session's checkpoint %d", i)
		require.Equal(t, rec.End.RAMHash, res.End.RAMHash, "from the session's checkpoint %d", i)
		require.True(t, strings.HasSuffix(console, out), "from the session's checkpoint %d: the output from there on", i)
	}
	res, _, err = replay(replayer.Options{Start: n / 2, Until: n + 2})
	require.NoError(t, err)
	require.True(t, res.Segment)
	require.Equal(t, own[1].Events, res.Events, "ended at the session's second checkpoint")
}

// A debugger's syscall stops (linux.ExitWatcher: each call's entry, and
// its return as the thread runs again after it — rt_sigreturn's where
// the context it restores resumes) are the same in a replay
// from a checkpoint as in one from boot from there on — the returns of
// calls in progress at the checkpoint (pipeline's parent blocked on its
// pipe, its threads on their condition variable) included — and each
// return is of the call its thread entered last. A call that blocked and
// runs again when woken is entered once.
func TestSyscallStopsFromACheckpoint(t *testing.T) {
	bin := cprog.Build(t, "musl-gcc", "pipeline", "-static", "-O1")
	ck := filepath.Join(t.TempDir(), "prog.ckpt")
	path, rec, _ := recordLinuxOptions(t, recorder.Options{CheckpointEvery: 50 * time.Millisecond, Checkpoints: ck, MemBytes: 64 << 20}, nil, bin, "pipeline", "20")
	n := len(rec.Checkpoints)
	require.GreaterOrEqual(t, n, 2)
	stops := func(start int) []callEvent {
		w := &callWatcher{}
		o := replayer.Options{Tape: path, Console: &bytes.Buffer{}, Start: start, Debugger: w}
		if start > 0 {
			o.Checkpoints = ck
		}
		res, err := replayer.Replay(context.Background(), o)
		require.NoError(t, err, "from checkpoint %d", start)
		require.Equal(t, rec.End.RAMHash, res.End.RAMHash, "from checkpoint %d", start)
		return w.events
	}
	all := stops(0)
	open := map[int]*callEvent{}
	var returns, blocked int
	var unreturned []string
	for i, e := range all {
		if !e.entry {
			returns++
			require.NotNil(t, open[e.tid], "thread %d returns at exit %d from no call", e.tid, e.exit)
			nr := open[e.tid].nr
			if nr == unix.SYS_RT_SIGRETURN {
				nr = ^uint64(0) // its return is numbered -1, as Linux's orig_rax
			}
			require.Equal(t, nr, e.nr, "thread %d returns from the call it entered, at exit %d", e.tid, e.exit)
			if e.exit > e.entered {
				blocked++
			}
			open[e.tid] = nil
			continue
		}
		// Calls that return nowhere: exit, exit_group.
		if last := open[e.tid]; last != nil && !slices.Contains([]uint64{unix.SYS_EXIT, unix.SYS_EXIT_GROUP}, last.nr) {
			unreturned = append(unreturned, fmt.Sprintf("thread %d: call %d at exit %d", e.tid, last.nr, last.exit))
		}
		open[e.tid] = &all[i]
	}
	t.Logf("%d entries and returns, %d returns, %d of blocked calls; %d checkpoints", len(all), returns, blocked, n)
	require.Greater(t, returns, 20)
	require.NotZero(t, blocked, "calls that blocked")
	// At most the call SIGCHLD's handler interrupted; a blocked call
	// entered again when woken would be here at each block.
	require.LessOrEqual(t, len(unreturned), 1, "calls entered and not returned from: %v", unreturned)
	i := n / 2
	at := rec.Checkpoints[i-1].Pos.Exit
	// A call entered before the checkpoint is known there by its
	// return alone: not where it was entered.
	after := func(events []callEvent) []callEvent {
		var out []callEvent
		for _, e := range events {
			if e.entered <= at {
				e.entered = 0
			}
			if e.exit > at {
				out = append(out, e)
			}
		}
		return out
	}
	got := stops(i)
	require.NotEmpty(t, got)
	require.Equal(t, after(all), after(got), "from checkpoint %d (exit %d)", i, at)
}

// callEvent is a system call's entry or return, at an exit.
type callEvent struct {
	exit, nr uint64
	tid      int
	entry    bool
	entered  uint64 // for a return: its entry's exit, if seen
}

// callWatcher records a replay's syscall stops.
type callWatcher struct {
	events  []callEvent
	entries map[int]uint64
}

func (*callWatcher) Mapped(linux.Mapping, []byte) ([]uint64, error) { return nil, nil }
func (*callWatcher) Break(*linux.Break) error                       { return nil }
func (*callWatcher) Resumed(*linux.Break) error                     { return nil }

func (w *callWatcher) Entering(b *linux.Break) error {
	if w.entries == nil {
		w.entries = map[int]uint64{}
	}
	w.entries[b.TID] = b.Position().Exit
	w.events = append(w.events, callEvent{exit: b.Position().Exit, nr: b.Syscall, tid: b.TID, entry: true})
	return nil
}

func (w *callWatcher) Exited(b *linux.Break) error {
	if b.Returned {
		w.events = append(w.events, callEvent{exit: b.Position().Exit, nr: b.Syscall, tid: b.TID, entered: w.entries[b.TID]})
	}
	return nil
}

// recordLinuxCheckpoints records bin taking a checkpoint every 5 ms of
// guest time, and returns the tape, the checkpoint file, the result and
// the console output.
func recordLinuxCheckpoints(t *testing.T, bin string, argv ...string) (string, string, *recorder.Result, string) {
	t.Helper()
	ck := filepath.Join(t.TempDir(), "prog.ckpt")
	path, res, out := recordLinuxOptions(t, recorder.Options{CheckpointEvery: 5 * time.Millisecond, Checkpoints: ck}, nil, bin, argv...)
	return path, ck, res, out
}

// A checkpoint keeps each thread's whole XSAVE state: restored in the
// middle of xstate's run — nine threads in three processes, each holding
// its own zmm, ymm and mask registers across calls and signal handlers —
// every thread still finds its values, so the output and RAM are the
// recording's.
func TestLinuxCheckpointsKeepVectorRegisters(t *testing.T) {
	bin := cprog.Build(t, "gcc", "xstate", "-static", "-O1", "-pthread")
	ck := filepath.Join(t.TempDir(), "prog.ckpt")
	// 256 MiB: nine threads' 8 MiB stacks are backed when mapped, and in
	// 64 MiB a process whose siblings' threads still lived could not
	// create its own (pthread_create: ENOMEM), depending on the timing.
	path, rec, console := recordLinuxOptions(t, recorder.Options{CheckpointEvery: 40 * time.Millisecond, Checkpoints: ck, MemBytes: 256 << 20}, nil, bin, "xstate")
	require.Contains(t, console, "registers kept: 9 of 9 threads\n")
	n := len(rec.Checkpoints)
	require.GreaterOrEqual(t, n, 3, "checkpoints taken while recording")
	for i, part := range replaysFromEach(t, path, ck, rec, console, 1, n/2, n-1) {
		require.Contains(t, part, "registers kept: 9 of 9 threads\n", "from checkpoint %d", i)
	}
}

// replaysFromEach replays the tape at path from each of the checkpoints
// starts (of ck; duplicates once) to the recorded end: the recording's
// RAM, and the recorded console's output from there on. It returns what
// each replay printed, by checkpoint.
func replaysFromEach(t *testing.T, path, ck string, rec *recorder.Result, console string, starts ...int) map[int]string {
	t.Helper()
	out := map[int]string{}
	for _, i := range slices.Compact(starts) {
		var part bytes.Buffer
		res, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &part, Checkpoints: ck, Start: i})
		require.NoError(t, err, "from checkpoint %d of %d", i, len(rec.Checkpoints))
		require.Equal(t, rec.End.RAMHash, res.End.RAMHash, "from checkpoint %d", i)
		require.True(t, strings.HasSuffix(console, part.String()), "from checkpoint %d: the output from there on", i)
		out[i] = part.String()
	}
	return out
}

// A checkpoint keeps each thread's alternate signal stack: a program whose
// handler runs on it at every signal, replayed from checkpoints in the
// middle of its run, still finds it there; and a Go program (whose
// runtime takes SIGURG on its signal stack) replays from each of its
// checkpoints to the recorded end.
func TestLinuxCheckpointsKeepAltStacks(t *testing.T) {
	t.Run("altloop", func(t *testing.T) {
		replaysFromRecordersCheckpoints(t, cprog.Build(t, "gcc", "altloop", "-static", "-O1"), "altloop", "on the alternate stack: 1000 of 1000, off it: 0\n")
	})
	t.Run("goroutines", func(t *testing.T) {
		replaysFromRecordersCheckpoints(t, cprog.BuildGo(t, "goroutines"), "goroutines", "rounds 200 checksum")
	})
}

// A Go program whose runtime sleeps in epoll_pwait, its eventfd and
// timers watched by its epoll instance, replays from each of its
// checkpoints: the instance's items and ready list are in them. (128 MiB:
// every page a program maps is backed when mapped, and the Go runtime's
// reservations outgrow 64.)
func TestLinuxCheckpointsKeepEpoll(t *testing.T) {
	replaysFromRecordersCheckpoints(t, cprog.BuildGo(t, "gotimers"), "gotimers", "ticks 10\n")
}

// replaysFromRecordersCheckpoints records bin with a checkpoint every 30 ms,
// requires want in its output, and replays it from its first, middle and
// last checkpoints to the recorded end: the same RAM, the output from
// there on.
func replaysFromRecordersCheckpoints(t *testing.T, bin, name, want string) {
	t.Helper()
	ck := filepath.Join(t.TempDir(), "prog.ckpt")
	path, rec, console := recordLinuxOptions(t, recorder.Options{CheckpointEvery: 30 * time.Millisecond, Checkpoints: ck, MemBytes: 128 << 20}, nil, bin, name)
	require.Contains(t, console, want)
	n := len(rec.Checkpoints)
	require.GreaterOrEqual(t, n, 2, "checkpoints taken while recording (at its exits)")
	replaysFromEach(t, path, ck, rec, console, 1, n/2, n)
}

// A checkpoint keeps shared memory: two processes map an anonymous
// shared region, a file and a memfd shared, and wait on process-shared
// futexes in them; replayed from checkpoints taken while both run, the
// objects are restored shared (the frames, which ranges map them, the
// file's pages) and the counters and the file's contents end as
// recorded.
func TestLinuxCheckpointsKeepSharedMemory(t *testing.T) {
	bin := cprog.Build(t, "gcc", "shmloop", "-static", "-O1", "-pthread")
	path, ck, rec, console := recordLinuxCheckpoints(t, bin, "shmloop", "20000")
	require.Equal(t, "anon 40000 file 40000 memfd 80000 read 40000\n", console)
	n := len(rec.Checkpoints)
	require.GreaterOrEqual(t, n, 3, "checkpoints taken while recording")
	replaysFromEach(t, path, ck, rec, console, 1, n/2, n)
}

// A checkpoint keeps sockets: a server and a client talk over TCP on the
// loopback, an AF_UNIX stream at an abstract name and a socketpair, and
// checkpoints fall while bytes are in flight, connections wait to be
// accepted and both processes poll; replayed from them, the connections,
// names, ports and buffers are there and the sums end as recorded.
func TestLinuxCheckpointsKeepSockets(t *testing.T) {
	bin := cprog.Build(t, "gcc", "sockloop", "-static", "-O1")
	path, ck, rec, console := recordLinuxCheckpoints(t, bin, "sockloop", "400")
	require.Equal(t, "tcp 80200 unix 160400 pair 240600\n", console)
	n := len(rec.Checkpoints)
	require.GreaterOrEqual(t, n, 3, "checkpoints taken while recording")
	replaysFromEach(t, path, ck, rec, console, 1, n/2, n)
}
