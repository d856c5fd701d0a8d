package linux_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/cprog"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/linux/vfs"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

// build compiles testdata/src with cc and flags into a temporary
// executable and returns its path.
func build(t *testing.T, cc, src string, flags ...string) string {
	t.Helper()
	kvmtest.RequireTools(t, cc)
	out := filepath.Join(t.TempDir(), filepath.Base(src)+".bin")
	cmd := exec.Command(cc, append(flags, "-o", out, filepath.Join("testdata", src))...)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s: %s", cc, b)
	return out
}

// runLive runs the executable at path with argv under the Linux
// personality, live, and returns the result and the console output.
func runLive(t *testing.T, path string, argv, env []string) (*vmm.Result, string, error) {
	t.Helper()
	return runLiveHz(t, vmm.DefaultTimerHz, path, argv, env)
}

// runLiveHz is runLive with the timer at hz: a live run takes its ticks
// wherever the program is, so a fast timer preempts it often.
func runLiveHz(t *testing.T, hz int, path string, argv, env []string) (*vmm.Result, string, error) {
	t.Helper()
	_, res, out, err := runLiveKernel(t, hz, path, argv, env)
	return res, out, err
}

// runLiveKernel is runLiveHz that also gives the kernel, for its
// statistics.
func runLiveKernel(t *testing.T, hz int, path string, argv, env []string) (*linux.Kernel, *vmm.Result, string, error) {
	t.Helper()
	return runLiveSetUp(t, hz, path, argv, env, func(*linux.Program) {})
}

// runLiveSetUp is runLiveKernel with the program set up before it runs.
func runLiveSetUp(t *testing.T, hz int, path string, argv, env []string, setUp func(*linux.Program)) (*linux.Kernel, *vmm.Result, string, error) {
	t.Helper()
	kvmtest.Require(t)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	p := linux.Program{Path: "/bin/" + argv[0], Image: raw, Argv: argv, Env: env, Epoch: time.Unix(1700000000, 0), User: linux.InvokingUser()}
	setUp(&p)
	k, err := linux.New(p)
	require.NoError(t, err)
	var out bytes.Buffer
	m, err := vmm.New(vmm.Config{Kernel: k, MemBytes: 256 << 20, Console: &out, TimerHz: hz})
	require.NoError(t, err)
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := m.Run(ctx)
	stats := k.Stats()
	t.Logf("system calls: %v; unsupported: %v", stats.Calls, stats.Unsupported)
	servedAsCalled(t, stats)
	return k, res, out.String(), err
}

// servedAsCalled requires the time the VMM served calls with to be
// charged to the calls made, by name, one serving a call — but for the
// call that ended the run, which returned nowhere (an exit_group, or a
// call that let a signal kill the program: abort's rt_sigprocmask), and
// numbers past the table, which are not timed.
func servedAsCalled(t *testing.T, stats linux.Stats) {
	t.Helper()
	unserved := 0
	for name, n := range stats.Calls {
		if strings.HasPrefix(name, "syscall ") {
			continue
		}
		s := stats.Served[name].Calls
		require.LessOrEqual(t, s, n, "the calls to %s served", name)
		if s < n {
			require.Equal(t, n-1, s, "the calls to %s served", name)
			unserved++
		}
	}
	require.LessOrEqual(t, unserved, 1, "calls that were not served: %v, served %v", stats.Calls, stats.Served)
	for name := range stats.Served {
		require.Contains(t, stats.Calls, name, "served but not called")
	}
}

// buildMuslStaticPIE builds testdata/src as a musl static-PIE. Debian's
// musl-gcc ignores -static-pie, so it is linked by hand around musl's
// self-relocating rcrt1.o.
func buildMuslStaticPIE(t *testing.T, src string) string {
	t.Helper()
	kvmtest.RequireTools(t, "musl-gcc", "gcc")
	const musl = "/usr/lib/x86_64-linux-musl"
	dir := t.TempDir()
	obj, out := filepath.Join(dir, "prog.o"), filepath.Join(dir, "prog")
	b, err := exec.Command("musl-gcc", "-fPIE", "-O2", "-c", "-o", obj, filepath.Join("testdata", src)).CombinedOutput()
	require.NoError(t, err, "%s", b)
	gccFile := func(name string) string {
		p, err := exec.Command("gcc", "-print-file-name="+name).Output()
		require.NoError(t, err)
		return strings.TrimSpace(string(p))
	}
	libgcc, err := exec.Command("gcc", "-print-libgcc-file-name").Output()
	require.NoError(t, err)
	b, err = exec.Command("gcc", "-static-pie", "-nostdlib", "-nostartfiles", "-o", out,
		musl+"/rcrt1.o", musl+"/crti.o", gccFile("crtbeginS.o"), obj, musl+"/libc.a",
		strings.TrimSpace(string(libgcc)), gccFile("crtendS.o"), musl+"/crtn.o").CombinedOutput()
	require.NoError(t, err, "%s", b)
	return out
}

func TestStaticHello(t *testing.T) {
	for _, tc := range []struct {
		name, cc string
		flags    []string
	}{
		{"musl", "musl-gcc", []string{"-static", "-O2"}},
		{"musl-pie", "", nil}, // buildMuslStaticPIE
		{"glibc", "gcc", []string{"-static", "-O2"}},
		{"glibc-pie", "gcc", []string{"-static-pie", "-fPIE", "-O2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := ""
			if tc.cc == "" {
				bin = buildMuslStaticPIE(t, "hello.c")
			} else {
				bin = build(t, tc.cc, "hello.c", tc.flags...)
			}
			res, out, err := runLive(t, bin, []string{"hello", "one", "two words"}, []string{"HOME=/", "LANG=C"})
			require.NoError(t, err, out)
			require.Equal(t, uint32(3), res.Status, out)
			require.Equal(t, "hello from hello with 3 args\narg 1: one\narg 2: two words\nenv: HOME=/\nenv: LANG=C\nheap works\nclock ok: 1\n", out)
		})
	}
}

// program reads the executable at path into a Program run as argv.
func program(t *testing.T, path string, argv ...string) *linux.Program {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return &linux.Program{Path: "/bin/" + argv[0], Image: raw, Argv: argv, Env: []string{"HOME=/"},
		Random: [16]byte{7, 7, 7}, Epoch: time.Unix(1700000000, 0), User: linux.InvokingUser()}
}

// recordProgram records p and returns the tape's path, the result and the
// console output.
func recordProgram(t *testing.T, p *linux.Program, jitter time.Duration) (string, *recorder.Result, string) {
	t.Helper()
	kvmtest.Require(t)
	path := filepath.Join(t.TempDir(), "prog.tape")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := recorder.Record(ctx, recorder.Options{Linux: p, MemBytes: 256 << 20, TimerHz: 250, TimerJitter: jitter,
		Output: path, Console: &out, Host: recorder.HostOff})
	require.NoError(t, err, out.String())
	return path, res, out.String()
}

// replaysMatch replays the tape at path n times, each to the recorded
// console, RAM and exit status, and returns the replays' results.
func replaysMatch(t *testing.T, path string, rec *recorder.Result, console string, n int) []*replayer.Result {
	t.Helper()
	reps := make([]*replayer.Result, n)
	for i := range reps {
		var out bytes.Buffer
		rep, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &out})
		require.NoError(t, err)
		require.Equal(t, console, out.String(), "replay %d", i)
		require.Equal(t, rec.End.RAMHash, rep.End.RAMHash, "replay %d", i)
		require.Equal(t, rec.Status, rep.Status, "replay %d", i)
		reps[i] = rep
	}
	return reps
}

// asOnHost runs the executable at bin natively, then requires the host's
// output from it under the personality (prints).
func asOnHost(t *testing.T, bin, name string, jitter time.Duration) {
	t.Helper()
	prints(t, bin, name, hostOutput(t, bin), jitter)
}

// hostOutput runs the executable at bin natively and returns its output.
func hostOutput(t *testing.T, bin string) string {
	t.Helper()
	// In a folder of its own: what the program makes by a relative path
	// (udp.c's socket) is not left in the package, and is not made on a
	// network file system, where a socket bound to a path can hang.
	host := exec.Command(bin)
	host.Dir = t.TempDir()
	want, err := host.Output()
	require.NoError(t, err)
	return string(want)
}

// prints runs the executable at bin under the personality — live, and
// recorded with the timer jittered by jitter and replayed twice — and
// requires want as its output every time.
func prints(t *testing.T, bin, name, want string, jitter time.Duration) {
	t.Helper()
	_, out, err := runLive(t, bin, []string{name}, nil)
	require.NoError(t, err, out)
	require.Equal(t, want, out)
	path, rec, console := recordProgram(t, program(t, bin, name), jitter)
	require.Equal(t, want, console)
	replaysMatch(t, path, rec, console, 2)
}

// Every static kind records and replays to the same console, RAM and exit
// status, three times, with the timer jittered too.
func TestStaticRecordReplay(t *testing.T) {
	for _, tc := range []struct {
		name, cc string
		flags    []string
	}{
		{"musl", "musl-gcc", []string{"-static", "-O2"}},
		{"glibc-pie", "gcc", []string{"-static-pie", "-fPIE", "-O2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := build(t, tc.cc, "hello.c", tc.flags...)
			for _, jitter := range []time.Duration{0, 2 * time.Millisecond} {
				path, rec, console := recordProgram(t, program(t, bin, "hello", "x"), jitter)
				require.Equal(t, uint32(3), rec.Status)
				require.Contains(t, console, "heap works\n")
				require.Equal(t, tape.SourceExitSync, rec.PositionSource)
				replaysMatch(t, path, rec, console, 3)
			}
		})
	}
}

// pthreads (mutex, condition variable, join) on musl and glibc, static:
// threads share the vCPU and switch at their system calls.
func TestThreads(t *testing.T) {
	for _, tc := range []struct {
		name, cc string
		flags    []string
	}{
		{"musl", "musl-gcc", []string{"-static", "-O2", "-pthread"}},
		{"glibc", "gcc", []string{"-static", "-O2", "-pthread"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := build(t, tc.cc, "threads.c", tc.flags...)
			res, out, err := runLive(t, bin, []string{"threads"}, nil)
			require.NoError(t, err, out)
			require.Equal(t, uint32(0), res.Status, out)
			require.Equal(t, "total=400000\n", out)

			path, rec, console := recordProgram(t, program(t, bin, "threads"), time.Millisecond)
			require.Equal(t, "total=400000\n", console)
			replaysMatch(t, path, rec, console, 3)
		})
	}
}

// Files the host gives the program: read, mapped, listed; files it writes
// live in memory; /dev/urandom is recorded entropy. Replays match.
func TestFiles(t *testing.T) {
	input := filepath.Join(t.TempDir(), "input.txt")
	require.NoError(t, os.WriteFile(input, []byte("hello, file\n"), 0o644))
	want := "input: 12 bytes, says: hello, file\nmapped: hello\nread back: written 42\nentry: input.txt\nentry: other\n" +
		"urandom: 16 bytes\nmissing: -1\nunlinked: -1\n"
	for _, tc := range []struct {
		name, cc string
		flags    []string
	}{
		{"musl", "musl-gcc", []string{"-static", "-O2"}},
		{"glibc", "gcc", []string{"-static", "-O2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := build(t, tc.cc, "files.c", tc.flags...)
			p := program(t, bin, "files")
			p.Mounts = []linux.Mount{{Guest: "/data/input.txt", Host: input}, {Guest: "/data/other", Host: input}}
			path, rec, console := recordProgram(t, p, 0)
			require.Equal(t, uint32(0), rec.Status, console)
			require.Equal(t, want, console)
			replaysMatch(t, path, rec, console, 1)
		})
	}

	// A file that changed since the recording is refused by name.
	bin := build(t, "musl-gcc", "files.c", "-static", "-O2")
	p := program(t, bin, "files")
	p.Mounts = []linux.Mount{{Guest: "/data/input.txt", Host: input}, {Guest: "/data/other", Host: input}}
	path, _, _ := recordProgram(t, p, 0)
	require.NoError(t, os.WriteFile(input, []byte("hello, FILE\n"), 0o644))
	_, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: &bytes.Buffer{}})
	require.ErrorContains(t, err, input+" is not the file the program read when recorded")
}

// A dynamically linked glibc program: the host's loader and libraries,
// found as ldd finds them, recorded by hash; the loader's RDTSCs answered
// from the recorded clock.
func TestDynamic(t *testing.T) {
	bin := build(t, "gcc", "hello.c", "-O2")
	p := program(t, bin, "hello", "x")
	path, rec, console := recordProgram(t, p, time.Millisecond)
	require.Equal(t, uint32(3), rec.Status, console)
	require.Contains(t, console, "hello from hello with 2 args\n")
	replaysMatch(t, path, rec, console, 3)
}

// realloc of a large block grows it through mremap, its bytes kept.
func TestRealloc(t *testing.T) {
	for _, cc := range []string{"musl-gcc", "gcc"} {
		bin := build(t, cc, "realloc.c", "-static", "-O2")
		res, out, err := runLive(t, bin, []string{"realloc"}, nil)
		require.NoError(t, err, out)
		require.Equal(t, uint32(0), res.Status)
		require.Equal(t, "size 67108864 sum 133693440\n", out, cc)
	}
}

// A thread that computes without system calls while another waits is
// named in a warning when recorded: ticks reach an unmodified program only
// at its calls. Either of hog.c's threads may be first (and the one
// warned of); the second computes alone.
func TestHogWarning(t *testing.T) {
	bin := build(t, "musl-gcc", "hog.c", "-static", "-O1", "-pthread")
	_, rec, console := recordProgram(t, program(t, bin, "hog"), 0)
	require.Equal(t, "worker ran\ndone 1\n", console)
	require.Len(t, rec.Warnings, 1, "%v", rec.Warnings)
	require.Regexp(t, `^thread [12] of /bin/hog ran \d\S* without a system call while 1 other threads waited to run`, rec.Warnings[0])
}

// A program that hands the kernel bad pointers, descriptors, sizes and
// numbers gets the errno Linux gives, and a null dereference ends the run
// with a fault report naming the signal and the address.
func TestHostileProgram(t *testing.T) {
	bin := build(t, "musl-gcc", "hostile.c", "-static", "-O1")
	_, out, err := runLive(t, bin, []string{"hostile"}, nil)
	var gf *vmm.GuestFault
	require.ErrorAs(t, err, &gf, out)
	require.Contains(t, gf.Error(), "the program got SIGSEGV: #PF")
	require.Contains(t, gf.Error(), "at address 0x0")
	for _, line := range []string{
		"write bad pointer: -1 ok", "read bad fd: -1 ok", "mmap huge: -1 ok", "mmap below 2 MiB: -1 ok",
		"open bad path: -1 ok", "open missing: -1 ok", "unknown call: -1 ok", "execve missing: -1 ok",
		"execve bad envp: -1 ok", "futex unaligned: -1 ok",
	} {
		require.Contains(t, out, line+"\n")
	}
}

// abort() (SIGABRT sent to itself) ends the run with a fault report
// naming the signal, on musl and glibc alike; recorded, it replays.
func TestAbort(t *testing.T) {
	for _, cc := range []string{"musl-gcc", "gcc"} {
		bin := build(t, cc, "abort.c", "-static", "-O2")
		_, out, err := runLive(t, bin, []string{"abort"}, nil)
		var gf *vmm.GuestFault
		require.ErrorAs(t, err, &gf, cc)
		require.Contains(t, gf.Error(), "killed by SIGABRT", cc)
		require.Equal(t, "about to abort\n", out)
		path := filepath.Join(t.TempDir(), "abort.tape")
		var console bytes.Buffer
		rec, err := recorder.Record(context.Background(), recorder.Options{Linux: program(t, bin, "abort"), Output: path,
			Console: &console, Host: recorder.HostOff})
		require.ErrorAs(t, err, &gf, "a recorded fault is returned with the recording")
		require.Equal(t, "fault", rec.End.Reason)
		replaysMatch(t, path, rec, console.String(), 1)
	}
}

// Signal handlers: one that returns (rt_sigreturn restores registers and
// FPU state), SIGCHLD, a SIGSEGV handler that escapes with siglongjmp, a
// blocked signal delivered when unblocked. The output is the host's.
func TestSignals(t *testing.T) {
	for _, cc := range []string{"musl-gcc", "gcc"} {
		asOnHost(t, build(t, cc, "signals.c", "-static", "-O1"), "signals", time.Millisecond)
	}
}

// poll and select: a timeout on an empty pipe, data a child writes later, the hang-up
// when it is gone; the host prints the same. Recorded, it replays.
func TestPoll(t *testing.T) {
	asOnHost(t, build(t, "musl-gcc", "poll.c", "-static", "-O1"), "poll", 0)
}

// setitimer's interval SIGALRMs reach a handler; alarm reports what is
// left. Recorded, the alarms land at the same places in every replay.
func TestAlarm(t *testing.T) {
	prints(t, build(t, "musl-gcc", "alarm.c", "-static", "-O1"), "alarm", "alarms 1\nalarm first 0\nalarm left 5\n", time.Millisecond)
}

// waitid for a child that exits and one killed by a signal; sigsuspend
// waiting with its own mask. The host prints the same.
func TestWaitAndSuspend(t *testing.T) {
	asOnHost(t, build(t, "musl-gcc", "wait.c", "-static", "-O1"), "wait", 0)
}

// fork shares a process's frames copy-on-write: a process with 150 MiB of
// heap forks in a 256 MiB guest, and each side writes its own page.
func TestCopyOnWriteFork(t *testing.T) {
	prints(t, build(t, "musl-gcc", "cow.c", "-static", "-O1"), "cow", "child 7 parent sees p p q\n", 0)
}

// Random system calls with random arguments, from several seeds: the
// program gets errors, the VMM neither fails nor panics, and a recording
// of it replays.
func TestRandomSystemCalls(t *testing.T) {
	bin := build(t, "musl-gcc", "chaos.c", "-static", "-O1")
	for _, seed := range []string{"1", "2", "3", "4"} {
		res, out, err := runLive(t, bin, []string{"chaos", seed}, nil)
		var gf *vmm.GuestFault
		if err != nil {
			require.ErrorAs(t, err, &gf, "seed %s: only the program may fail, by a signal: %v", seed, err)
			continue
		}
		require.Equal(t, uint32(0), res.Status, "seed %s: %s", seed, out)
		require.Contains(t, out, "made ")
	}
	path, rec, console := recordProgram(t, program(t, bin, "chaos", "5"), 0)
	replaysMatch(t, path, rec, console, 1)
}

// Every thread of three processes keeps its vector registers — zmm, ymm
// and mask registers where the CPU has them — across switches and signal
// handlers, and each handler finds its frame laid out as Linux lays it
// out; the output is the host's. A live run at 10 kHz switches in the
// middle of its spins; a recording switches at its calls, and replays.
func TestExtendedState(t *testing.T) {
	bin := cprog.Build(t, "gcc", "xstate", "-static", "-O1", "-pthread")
	want, err := exec.Command(bin).Output()
	require.NoError(t, err)
	require.Contains(t, string(want), "registers kept: 9 of 9 threads\nsignal frames as Linux lays them out: 9 of 9 threads\n")
	for _, hz := range []int{vmm.DefaultTimerHz, 10000} {
		res, out, err := runLiveHz(t, hz, bin, []string{"xstate"}, nil)
		require.NoError(t, err, out)
		require.Equal(t, uint32(0), res.Status, out)
		require.Equal(t, string(want), out, "at %d Hz", hz)
	}
	path, rec, console := recordProgram(t, program(t, bin, "xstate"), time.Millisecond)
	require.Equal(t, string(want), console)
	replaysMatch(t, path, rec, console, 2)
}

// A system call that writes into a page a fork left shared gives the
// writer its own copy; the program must then read what the call wrote,
// though it had read the page, through the shared frame, just before.
func TestCopyOnWriteByTheKernel(t *testing.T) {
	prints(t, build(t, "gcc", "cowread.c", "-static", "-O2"), "cowread", "stale reads: 0\n", 0)
}

// A write that faults on a page a fork left shared runs again before
// anything else of the program does: a tick right after the fault must
// not deliver a signal first, whose frame would go into the new copy
// while the program still reads the page through the old one. The run
// takes a tick every 100 µs and a SIGALRM at each.
func TestCopyOnWriteFaultThenSignal(t *testing.T) {
	bin := build(t, "gcc", "cowsig.c", "-static", "-O2")
	for i := 0; i < 3; i++ {
		res, out, err := runLiveHz(t, 10000, bin, []string{"cowsig"}, nil)
		require.NoError(t, err, out)
		require.Equal(t, uint32(0), res.Status, out)
		require.Equal(t, "done (signals came)\n", out)
	}
}

// A thread's exit wakes the joiner of its own process: two processes
// whose threads' exit futexes are at the same address each join theirs.
func TestFutexPerProcess(t *testing.T) {
	asOnHost(t, build(t, "gcc", "futexfork.c", "-static", "-O1", "-pthread"), "futexfork", 0)
}

// Alternate signal stacks behave as Linux's: errors, old values, handlers
// on and off the stack, nesting, EPERM on it, SS_DISABLE, SS_AUTODISARM,
// the frame's XSAVE image on it, a stack too small for a frame. The
// output is the host's.
func TestAltStack(t *testing.T) {
	asOnHost(t, build(t, "gcc", "altstack.c", "-static", "-O1"), "altstack", 0)
}

// A Go program whose goroutines compute past the runtime's 10 ms slice
// (so it preempts them with SIGURG on its signal stack), share a mutex and
// report through a channel finishes with the host's output, live,
// recorded and replayed: the runtime's RDTSCPs are answered from the
// recorded clock.
func TestGoProgram(t *testing.T) {
	asOnHost(t, cprog.BuildGo(t, "goroutines"), "goroutines", time.Millisecond)
}

// epoll and eventfd answer as Linux does: level- and edge-triggered and
// one-shot items, hang-ups, the item of a closed file going away, the
// errors, a timeout, a thread woken by another's eventfd write, nested
// instances — the host's output, live, recorded and replayed.
func TestEpoll(t *testing.T) {
	asOnHost(t, build(t, "gcc", "epoll.c", "-static", "-O1", "-pthread"), "epoll", 0)
}

// timerfd answers as Linux does, on the recorded clock: one-shot and
// periodic timers, absolute times on both clocks, gettime, disarming, a
// timerfd in epoll, the errors — the host's output, live, recorded with
// the timer jittered and replayed.
func TestTimerfd(t *testing.T) {
	asOnHost(t, build(t, "gcc", "timerfd.c", "-static", "-O1"), "timerfd", 2*time.Millisecond)
}

// POSIX timers answer as Linux's do: the signal and its siginfo, a timer
// aimed at one thread, one that notifies no one, overruns while the
// signal is blocked, gettime, delete and the errors — the host's output,
// live, recorded with the timer jittered and replayed.
func TestPosixTimers(t *testing.T) {
	asOnHost(t, build(t, "gcc", "posixtimer.c", "-static", "-O1", "-pthread"), "posixtimer", 2*time.Millisecond)
}

// The working directory answers as Linux's: chdir and fchdir anywhere,
// relative paths from it, getcwd following a rename and failing once it
// is removed, the errors — the host's output, live, recorded and
// replayed. (Only / was allowed before.)
func TestWorkingDirectory(t *testing.T) {
	asOnHost(t, build(t, "gcc", "cwd.c", "-static", "-O1"), "cwd", 0)
}

// Permission bits: umask applied to new files and directories, chmod,
// fchmod and fchmodat — the host's output, live, recorded and replayed
// (files were 0666 whatever the umask, and chmod answered ENOSYS).
func TestModes(t *testing.T) {
	asOnHost(t, build(t, "gcc", "modes.c", "-static", "-O1"), "modes", 0)
}

// The identity calls answer as Linux answers an unprivileged user with no
// capabilities on one CPU: the host's output of the same program run as
// uid 1000 with no capabilities pinned to CPU 0 (setpriv, taskset) —
// setresuid and capset to root refused, capget's version probe, the one
// CPU, clock resolutions, close_range — live, recorded and replayed.
func TestIdentity(t *testing.T) {
	kvmtest.RequireTools(t, "setpriv", "taskset")
	bin := build(t, "gcc", "identity.c", "-static", "-O1")
	want, err := exec.Command("taskset", "-c", "0", "setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "--inh-caps=-all", bin).Output()
	require.NoError(t, err)
	printsAsUser(t, bin, "identity", string(want))
}

// printsAsUser is prints for a program run as uid and gid 1000.
func printsAsUser(t *testing.T, bin, name, want string) {
	t.Helper()
	printsAs(t, linux.User{UID: 1000, GID: 1000}, bin, []string{name}, want)
}

// printsAs is printsAsUser for user u and the arguments argv.
func printsAs(t *testing.T, u linux.User, bin string, argv []string, want string) {
	t.Helper()
	p := program(t, bin, argv...)
	p.User = u
	_, out, err := runProgramLive(t, p)
	require.NoError(t, err, out)
	require.Equal(t, want, out)
	path, rec, console := recordProgram(t, p, 0)
	require.Equal(t, want, console)
	replaysMatch(t, path, rec, console, 2)
}

// An unprivileged user's rights are Linux's: the class bits of a file,
// write and search on a directory to create, remove or rename in it
// (EEXIST and ENOENT first), only the owner changing a mode or setting
// times, search to enter; root's files are not the user's to write,
// chmod or remove — the host's output of the program run as uid 1000,
// live, recorded and replayed (every file was writable by everyone).
func TestPermissions(t *testing.T) {
	kvmtest.RequireTools(t, "setpriv")
	dir, err := os.MkdirTemp("", "perms")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755)) // for uid 1000 to run it natively
	bin := filepath.Join(dir, "perms")
	out, err := exec.Command("gcc", "-static", "-O1", "-o", bin, filepath.Join("testdata", "perms.c")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	want, err := exec.Command("setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", bin).Output()
	require.NoError(t, err)
	require.Contains(t, string(want), "write /etc/passwd: -1 Permission denied\n")
	printsAsUser(t, bin, "perms", string(want))
}

// A user's supplementary groups are its own: getgroups lists them,
// /proc/self/status says them, a file of one of them is the user's to
// access as its group, setgroups may keep them and nothing else — the
// host's output of the program run as uid 1000 in groups 4242 and 4243,
// live, recorded and replayed (getgroups said none: id left out the kvm
// group every user of reprise is in).
func TestSupplementaryGroups(t *testing.T) {
	kvmtest.RequireTools(t, "setpriv")
	dir, err := os.MkdirTemp("", "groups")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "groups")
	out, err := exec.Command("gcc", "-static", "-O1", "-o", bin, filepath.Join("testdata", "groups.c")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	ours, theirs := filepath.Join(dir, "ours"), filepath.Join(dir, "theirs")
	for f, gid := range map[string]int{ours: 4242, theirs: 4244} {
		require.NoError(t, os.WriteFile(f, []byte("x"), 0o640))
		require.NoError(t, os.Chown(f, 0, gid))
		require.NoError(t, os.Chmod(f, 0o640))
	}
	want, err := exec.Command("setpriv", "--reuid=1000", "--regid=1000", "--groups=4242,4243", bin, ours, theirs).Output()
	require.NoError(t, err)
	require.Contains(t, string(want), "groups: 4242 4243\n")
	printsAs(t, linux.User{UID: 1000, GID: 1000, Groups: []uint32{4242, 4243}}, bin, []string{"groups", ours, theirs}, string(want))
}

// execve runs "#!" scripts through their interpreters (with and without
// an argument, nested, ELOOP for a loop) and refuses what Linux refuses
// (EACCES without execute permission or for a directory, ENOEXEC for a
// text file, ENOENT for a missing interpreter): the host's output, live,
// recorded and replayed. Scripts were ENOEXEC, and so was a file without
// execute permission.
func TestExecScripts(t *testing.T) {
	asOnHost(t, build(t, "gcc", "exec.c", "-static", "-O1"), "exec", 0)
}

// A file's times are Linux's: set by utimensat, futimens, utimes and
// utime (UTIME_OMIT, UTIME_NOW), stamped by a write, a truncation and
// O_TRUNC, a directory's by a change of its entries — the host's output,
// live, recorded and replayed (utimensat did nothing; files kept the
// program's start time).
func TestFileTimes(t *testing.T) {
	asOnHost(t, build(t, "gcc", "filetimes.c", "-static", "-O1"), "filetimes", time.Millisecond)
}

// /proc answers as the C library and runtimes read it: maps (the
// executable's code, the stack pthread_getattr_np finds), fd and its
// links, /dev/fd/N of a pipe opened and stat'ed, cpuinfo's processors,
// meminfo's RAM, cmdline, status, mounts, stat, statm, environ, and
// /proc/PID of the caller and of its parent from a child — the host's
// output, live, recorded and replayed (only /proc/self/exe existed;
// /proc/PID was not found, even the caller's own).
func TestProcFiles(t *testing.T) {
	asOnHost(t, build(t, "gcc", "procfs.c", "-static", "-O1", "-pthread"), "procfs", time.Millisecond)
}

// A directory's link count is 2 and one per subdirectory, of a host
// directory before and after it is listed and of the program's own — the
// host's output, live, recorded and replayed (every directory said 2).
func TestDirectoryLinks(t *testing.T) {
	asOnHost(t, build(t, "gcc", "dirlinks.c", "-static", "-O1"), "dirlinks", 0)
}

// Process groups and sessions are Linux's: a child in its parent's group
// until setpgid, kill(0) to the caller's group only, kill(-g) to group g,
// setsid, and their errors — the host's output, live, recorded and
// replayed (kill(0) signalled the first process: timeout(1) ended the
// whole run).
func TestProcessGroups(t *testing.T) {
	asOnHost(t, build(t, "gcc", "pgrp.c", "-static", "-O1"), "pgrp", time.Millisecond)
}

// ppoll, pselect6 and epoll_pwait hold their signal mask while they
// wait, and rt_sigpending reports what it left pending — the host's
// output, live, recorded and replayed (the masks were ignored, so a
// blocked signal the call let through never ended the wait;
// rt_sigpending was ENOSYS).
func TestWaitMasks(t *testing.T) {
	asOnHost(t, build(t, "gcc", "waitmask.c", "-static", "-O1"), "waitmask", time.Millisecond)
}

// FIONBIO, FIOCLEX, FIONCLEX and FIONREAD answer on every file, and the
// socket calls on a descriptor that is no socket answer ENOTSOCK — the
// host's output, live, recorded and replayed (FIONBIO was ENOTTY, which
// stopped node; getpeername was ENOSYS).
func TestGenericIoctls(t *testing.T) {
	asOnHost(t, build(t, "gcc", "ioctls.c", "-static", "-O1"), "ioctls", 0)
}

// renameat2's NOREPLACE and EXCHANGE (files, a file and a directory) and
// statfs/fstatfs answer as Linux does: the host's output, live, recorded
// and replayed (renameat2 took no flags; statfs was ENOSYS).
func TestRenameFlags(t *testing.T) {
	asOnHost(t, build(t, "gcc", "rename.c", "-static", "-O1"), "rename", 0)
}

// Hard links answer as Linux's: link and linkat, st_nlink, one inode
// under every name, unlink of one keeping the others, a rename onto
// another name of the same file leaving both, the errors — the host's
// output, live, recorded and replayed (link was ENOSYS).
func TestHardLinks(t *testing.T) {
	asOnHost(t, build(t, "gcc", "link.c", "-static", "-O1"), "link", 0)
}

// Symbolic links, the program's and the host's, resolve as on the host:
// readlink, lstat, a loop is ELOOP, a link to a directory is followed
// inside a path (symlink.c).
func TestSymlinks(t *testing.T) {
	asOnHost(t, build(t, "gcc", "symlink.c", "-static", "-O1"), "symlink", time.Millisecond)
}

// Advisory locks answer as Linux's: record locks between a parent and a
// child (conflicts, F_GETLK naming the holder, F_SETLKW waiting, a close
// of any descriptor dropping them), OFD locks, flock, the errors — the
// host's output, live, recorded and replayed (fcntl refused the lock
// commands and flock was ENOSYS).
func TestFileLocks(t *testing.T) {
	asOnHost(t, build(t, "gcc", "locks_fcntl.c", "-static", "-O1"), "locks", 0)
}

// signalfd answers as Linux's: blocked signals read as signalfd_siginfo
// with their sender and code (SIGTERM waits, blocked, instead of ending
// the program), a child's SIGCHLD with its status seen through poll and
// epoll, the mask changed in place, the errors — the host's output, live,
// recorded and replayed (signalfd was ENOSYS, a blocked SIGTERM killed
// at once, and kill's siginfo said SI_TKILL).
func TestSignalfd(t *testing.T) {
	asOnHost(t, build(t, "gcc", "signalfd.c", "-static", "-O1"), "signalfd", 0)
}

// A Go program that sleeps, waits on timers and a ticker, reads a file and
// collects garbage — its runtime's netpoller on epoll_pwait and an
// eventfd — prints what it prints on the host, live, recorded with the
// timer jittered and replayed. Before epoll it died at its first sleep
// ("epollcreate failed").
func TestGoTimers(t *testing.T) {
	asOnHost(t, cprog.BuildGo(t, "gotimers"), "gotimers", 2*time.Millisecond)
}

// runProgramLive runs p under the Linux personality, live, and returns
// the result and the console output: runLive for a program with its own
// guest path and files.
func runProgramLive(t *testing.T, p *linux.Program) (*vmm.Result, string, error) {
	t.Helper()
	kvmtest.Require(t)
	k, err := linux.New(*p)
	require.NoError(t, err)
	var out bytes.Buffer
	m, err := vmm.New(vmm.Config{Kernel: k, MemBytes: 256 << 20, Console: &out})
	require.NoError(t, err)
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := m.Run(ctx)
	return res, out.String(), err
}

// The initial stack is Linux's: auxv's types in Linux's order and its
// fixed values, and execfn, the strings, the end marker, the platform
// string and AT_RANDOM's bytes where Linux puts them below the top, with
// argc 16-byte aligned. The host runs the program without address
// randomisation (setarch -R), at the same path, with the same argv and
// environment, and prints the same, static or dynamic. Recorded, it
// replays.
func TestInitialStack(t *testing.T) {
	kvmtest.RequireTools(t, "setarch")
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"static", []string{"-static", "-O1"}},
		{"dynamic", []string{"-O1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := build(t, "gcc", "stack.c", tc.flags...)
			argv := []string{bin, "one", "two words", ""}
			env := []string{"HOME=/", "LANG=C", "SOME=thing else"}
			native := exec.Command("setarch", append([]string{"-R"}, argv...)...)
			native.Env = env
			want, err := native.Output()
			require.NoError(t, err)
			require.Contains(t, string(want), "end marker at top-8: zero 1\n")

			raw, err := os.ReadFile(bin)
			require.NoError(t, err)
			p := &linux.Program{Path: bin, Image: raw, Argv: argv, Env: env,
				Random: [16]byte{7, 7, 7}, Epoch: time.Unix(1700000000, 0)}
			res, out, err := runProgramLive(t, p)
			require.NoError(t, err, out)
			require.Equal(t, uint32(0), res.Status, out)
			require.Equal(t, string(want), out)

			path, rec, console := recordProgram(t, p, 0)
			require.Equal(t, string(want), console)
			replaysMatch(t, path, rec, console, 2)
		})
	}
}

// glibc's tunables parser reads past the end of the environment's last
// string, which on Linux is followed by execfn and the stack's end
// marker, not by AT_RANDOM's bytes: a dynamic program (the host's true) and
// a static one (busybox) given a tunable exit 0, as they do on the host.
// AT_RANDOM's bytes have no zero, as random bytes mostly have none, so a
// scan past the strings finds no end in them.
func TestTunablesReadPastEnvironment(t *testing.T) {
	kvmtest.RequireTools(t, "true", "busybox")
	env := []string{"GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2"}
	for _, argv := range [][]string{{"true"}, {"busybox", "true"}} {
		t.Run(argv[0], func(t *testing.T) {
			bin, err := exec.LookPath(argv[0])
			require.NoError(t, err)
			native := exec.Command(bin, argv[1:]...)
			native.Env = env
			require.NoError(t, native.Run())

			raw, err := os.ReadFile(bin)
			require.NoError(t, err)
			p := &linux.Program{Path: bin, Image: raw, Argv: argv, Env: env, Epoch: time.Unix(1700000000, 0),
				Random: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}
			res, out, err := runProgramLive(t, p)
			require.NoError(t, err, out)
			require.Equal(t, uint32(0), res.Status, out)
		})
	}
}

// Shared memory is shared as on Linux: MAP_SHARED|MAP_ANONYMOUS across
// fork with process-shared mutexes and condition variables (futexes
// keyed by frame), a file mapped shared coherent with read and write in
// every process, shm_open and sem_open in /dev/shm, memfd_create and its
// seals, msync, mincore, truncate, fallocate — the host's output, live,
// recorded and replayed (a shared anonymous mapping was copied at fork,
// so the counter was wrong; a writable shared file mapping was ENODEV).
func TestSharedMemory(t *testing.T) {
	asOnHost(t, build(t, "gcc", "shm.c", "-static", "-O1", "-pthread"), "shm", time.Millisecond)
}

// socketpair's AF_UNIX sockets are Linux's: stream bytes, message
// boundaries of seqpacket and datagram sockets (MSG_PEEK, MSG_TRUNC,
// empty messages), sendmsg and recvmsg over iovecs, shutdown, poll's
// readiness, EAGAIN, EPIPE and SIGPIPE, a pair across fork, SO_TYPE,
// SO_PEERCRED, SO_RCVBUF, fstat and /proc/self/fd, the errors — the
// host's output, live, recorded and replayed (socketpair was ENOSYS:
// python's asyncio could not start an event loop).
func TestSocketPairs(t *testing.T) {
	asOnHost(t, build(t, "gcc", "sockpair.c", "-static", "-O1"), "sockpair", time.Millisecond)
}

// AF_UNIX sockets bound to a path and to an abstract name listen, connect
// from a child and accept as Linux's: accept4's flags, the names
// getsockname, getpeername and accept give, SO_PEERCRED both ways,
// seqpacket boundaries, a listening socket's readiness, the socket file
// (ENXIO to open, EADDRINUSE, ECONNREFUSED once closed), autobind, and
// the errors — the host's output, live, recorded and replayed (socket was
// EAFNOSUPPORT).
func TestUnixSockets(t *testing.T) {
	asOnHost(t, build(t, "gcc", "unixsock.c", "-static", "-O1"), "unixsock", time.Millisecond)
}

// TCP over the loopback is Linux's: a listener on 127.0.0.1 and an
// ephemeral port, a client in a child, the addresses getsockname,
// getpeername and accept give, shutdown's end of file, a close with bytes
// unread resetting the connection (ECONNRESET), a dual-stack AF_INET6
// listener seeing an IPv4 client v4-mapped and IPV6_V6ONLY refusing it,
// epoll on a listener, options, and the errors — the host's output,
// live, recorded and replayed (every internet socket was EAFNOSUPPORT).
func TestTCP(t *testing.T) {
	asOnHost(t, build(t, "gcc", "tcp.c", "-static", "-O1"), "tcp", time.Millisecond)
}

// An invalid opcode is the program's: UD2 raises SIGILL at its address
// each time, as on the host — the retry of a #UD that a stale host
// translation caused (the bytes at RIP decode to a valid instruction)
// leaves it alone.
func TestInvalidOpcode(t *testing.T) {
	bin := build(t, "gcc", "ud.c", "-static", "-O1")
	asOnHost(t, bin, "ud", time.Millisecond)
	k, _, _, err := runLiveKernel(t, vmm.DefaultTimerHz, bin, []string{"ud"}, nil)
	require.NoError(t, err)
	require.Zero(t, k.Stats().StaleTranslations, "a UD2 is not retried")
}

// A program opening sockets in a loop meets an errno, not the VMM's
// memory: every socket charges its buffer's capacity to the socket budget
// (vfs.MaxSocketBytes), so the 1 261st fails with ENOBUFS — before the
// descriptor table's bound — and once closed they can be opened again.
// Recorded and replayed like any other program.
func TestSocketFlood(t *testing.T) {
	bin := build(t, "gcc", "socketflood.c", "-static", "-O1")
	want := fmt.Sprintf("stopped after %d sockets: ENOBUFS\nagain: 0\n", vfs.MaxSocketBytes/vfs.SocketCapacity)
	prints(t, bin, "socketflood", want, time.Millisecond)
}

// A process starting as root drops to nobody as servers do, and is held
// to it as on Linux: its ids and groups after each call, root refused
// back, root's files and directories closed to it, root's processes not
// its to signal, its files its own, a fork inheriting it — the host's
// output (run as root), live, recorded and replayed (every set*id call
// but to the ids it had was EPERM, even for root).
func TestCredentials(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the program starts as root and drops to nobody (CI runs as root)")
	}
	const dir = "/tmp/reprise-creds"
	require.NoError(t, os.RemoveAll(dir))
	t.Cleanup(func() { os.RemoveAll(dir) })
	for path, mode := range map[string]os.FileMode{dir: 0o711, dir + "/closed": 0o700, dir + "/open": 0o777} {
		require.NoError(t, os.MkdirAll(path, 0o700))
		require.NoError(t, os.Chmod(path, mode))
	}
	require.NoError(t, os.WriteFile(dir+"/secret", []byte("root's\n"), 0o600))
	bin := build(t, "gcc", "creds.c", "-static", "-O1")
	want, err := exec.Command(bin).Output()
	require.NoError(t, err)
	require.NoError(t, os.Remove(dir+"/open/mine")) // the host run's: the program must not find it
	require.Contains(t, string(want), "dropped: uid 65534 65534 65534")
	prints(t, bin, "creds", string(want), time.Millisecond)
}

// Datagrams by address are Linux's: UDP over the loopback (a sender
// bound on its first send, recvfrom's sender, connect as default
// destination and filter, ECONNREFUSED after a connected socket's
// datagram found no socket, the source address a connect gives, a
// dual-stack socket hearing IPv4) and AF_UNIX datagram sockets by path
// and abstract name (named and unnamed senders, EPERM from a receiver
// connected elsewhere) — the host's output, live, recorded and replayed
// (UDP was EAFNOSUPPORT, an AF_UNIX datagram socket had only pairs).
func TestUDP(t *testing.T) {
	asOnHost(t, build(t, "gcc", "udp.c", "-static", "-O1"), "udp", time.Millisecond)
}

// F_SETLKW refuses to close a cycle of waiting processes with EDEADLK,
// as Linux's deadlock detection does — the host's output, live, recorded
// and replayed (both processes waited for ever).
func TestLockDeadlock(t *testing.T) {
	asOnHost(t, build(t, "gcc", "deadlk.c", "-static", "-O1"), "deadlk", time.Millisecond)
}
