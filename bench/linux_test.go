package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/tools/lockops"
	"github.com/reprise-vm/reprise/vmm"
)

// linuxProgram is a program the Linux personality runs in the benchmark:
// its command line and the host files it reads.
type linuxProgram struct {
	name  string
	argv  []string // argv[0] is the host path of the executable
	files []linux.Mount
}

func (p linuxProgram) program(tb testing.TB) linux.Program {
	tb.Helper()
	raw, err := os.ReadFile(p.argv[0])
	if err != nil {
		tb.Fatal(err)
	}
	return linux.Program{Path: p.argv[0], Image: raw, Argv: p.argv, Env: []string{"PATH=/usr/bin:/bin", "HOME=/", "LANG=C"}, User: linux.InvokingUser(),
		Epoch: time.Unix(1700000000, 0), Mounts: p.files}
}

// native runs the program on the host with its files at their host
// paths; pinned, on one host CPU, as the guest's threads share one vCPU.
func (p linuxProgram) native(tb testing.TB, hostArgv []string, pinned bool) time.Duration {
	tb.Helper()
	if pinned {
		hostArgv = append([]string{"taskset", "-c", "0"}, hostArgv...)
	}
	t0 := time.Now()
	cmd := exec.Command(hostArgv[0], hostArgv[1:]...)
	cmd.Stdout = io.Discard
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%s on the host: %v", p.name, err)
	}
	return time.Since(t0)
}

// live runs the program under the personality without recording.
func (p linuxProgram) live(tb testing.TB, console io.Writer) time.Duration {
	tb.Helper()
	d, _, _ := p.liveStats(tb, console)
	return d
}

// liveStats is live, with what the machine and the personality counted.
func (p linuxProgram) liveStats(tb testing.TB, console io.Writer) (time.Duration, vmm.Stats, linux.Stats) {
	tb.Helper()
	return p.liveSetUp(tb, console, func(*linux.Program) {})
}

// liveSetUp is liveStats with the program set up before it runs.
func (p linuxProgram) liveSetUp(tb testing.TB, console io.Writer, setUp func(*linux.Program)) (time.Duration, vmm.Stats, linux.Stats) {
	tb.Helper()
	t0 := time.Now()
	prog := p.program(tb)
	setUp(&prog)
	k, err := linux.New(prog)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := vmm.New(vmm.Config{Kernel: k, MemBytes: linux.DefaultMemBytes, Console: console})
	if err != nil {
		tb.Fatal(err)
	}
	defer m.Close()
	res, err := m.Run(context.Background())
	if err != nil || res.Status != 0 {
		tb.Fatalf("%s live: status %v, %v", p.name, res, err)
	}
	return time.Since(t0), res.Stats, k.Stats()
}

// record records the program to path and returns the time and tape size.
func (p linuxProgram) record(tb testing.TB, path string) (time.Duration, int64) {
	tb.Helper()
	return p.recordSetUp(tb, path, func(*linux.Program) {})
}

// recordSetUp is record with the program set up before it runs.
func (p linuxProgram) recordSetUp(tb testing.TB, path string, setUp func(*linux.Program)) (time.Duration, int64) {
	tb.Helper()
	prog := p.program(tb)
	setUp(&prog)
	t0 := time.Now()
	res, err := recorder.Record(context.Background(), recorder.Options{Linux: &prog, MemBytes: linux.DefaultMemBytes,
		Output: path, Console: io.Discard, Host: recorder.HostOff, Overwrite: true})
	if err != nil || res.Status != 0 {
		tb.Fatalf("%s recorded: %v", p.name, err)
	}
	return time.Since(t0), res.Bytes
}

// BenchmarkLinuxPrograms runs programs nobody here wrote natively (on all
// host CPUs, and pinned to one), live under reprise, recorded and
// replayed, side by side in each iteration, and reports the ratios and
// the tape's bytes per second. Times are whole runs; setup-ms is what a
// program that does nothing (busybox true) takes live — the VM's set-up
// and its end's RAM hash (BenchmarkStartUp has them as a user sees them)
// — and x-pinned-live-less-setup the ratio without it.
func BenchmarkLinuxPrograms(b *testing.B) {
	kvmtest.Require(b)
	kvmtest.RequireTools(b, "taskset", "busybox")
	dir := b.TempDir()
	input := filepath.Join(dir, "big.bin")
	data := make([]byte, 64<<20)
	for i := range data {
		data[i] = byte(i * i >> 7)
	}
	if err := os.WriteFile(input, data, 0o644); err != nil {
		b.Fatal(err)
	}
	script := filepath.Join(dir, "s.sh")
	if err := os.WriteFile(script, []byte("seq 1 20000 | sort -r | md5sum\nseq 1 20000 | awk '{s+=$1} END {print s}'\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	// A fork and an exec of busybox each round; the guest's script
	// writes in its /data, the host's in dir.
	forkLoop := func(to string) string {
		return "i=0; while [ $i -lt 200 ]; do echo x$i > " + to + "; cat " + to + " >/dev/null; i=$((i+1)); done; echo $i\n"
	}
	guestLoop, hostLoop := filepath.Join(dir, "loop.sh"), filepath.Join(dir, "hostloop.sh")
	if err := os.WriteFile(guestLoop, []byte(forkLoop("/data/f")), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(hostLoop, []byte(forkLoop(filepath.Join(dir, "f"))), 0o644); err != nil {
		b.Fatal(err)
	}
	sql := filepath.Join(dir, "t.sql")
	if err := os.WriteFile(sql, []byte("create table t(id integer primary key, v real);\n"+
		"with recursive c(x) as (select 1 union all select x+1 from c where x < 200000) insert into t(v) select x*1.5 from c;\n"+
		"create index iv on t(v);\nselect count(*), sum(v) from t;\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	lookPath := func(name string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			b.Skipf("%s: %v", name, err)
		}
		return p
	}
	threads := filepath.Join(dir, "threads")
	if out, err := exec.Command(lookPath("musl-gcc"), "-static", "-O2", "-pthread", "-o", threads, filepath.Join("..", "linux", "testdata", "threads.c")).CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	for _, tc := range []struct {
		prog linuxProgram
		host []string
	}{
		{linuxProgram{"pigz", []string{lookPath("pigz"), "-n", "-p", "4", "-c", "/data/big.bin"}, []linux.Mount{{Guest: "/data/big.bin", Host: input}}},
			[]string{lookPath("pigz"), "-n", "-p", "4", "-c", input}},
		{linuxProgram{"sha256sum", []string{lookPath("sha256sum"), "/data/big.bin"}, []linux.Mount{{Guest: "/data/big.bin", Host: input}}},
			[]string{lookPath("sha256sum"), input}},
		{linuxProgram{"sqlite3", []string{lookPath("sqlite3"), ":memory:", ".read /data/t.sql"}, []linux.Mount{{Guest: "/data/t.sql", Host: sql}}},
			[]string{lookPath("sqlite3"), ":memory:", ".read " + sql}},
		{linuxProgram{"threads-musl", []string{threads}, nil}, []string{threads}},
		{linuxProgram{"busybox-sh", []string{lookPath("busybox"), "sh", "/data/s.sh"}, []linux.Mount{{Guest: "/data/s.sh", Host: script}}},
			[]string{lookPath("busybox"), "sh", script}},
		{linuxProgram{"busybox-fork-exec", []string{lookPath("busybox"), "sh", "/data/loop.sh"}, []linux.Mount{{Guest: "/data/loop.sh", Host: guestLoop}}},
			[]string{lookPath("busybox"), "sh", hostLoop}},
	} {
		b.Run(tc.prog.name, func(b *testing.B) {
			var native, pinned, setup, live, rec, rep time.Duration
			var tapeBytes int64
			tp := filepath.Join(dir, tc.prog.name+".tape")
			noop := linuxProgram{"true", []string{lookPath("busybox"), "true"}, nil}
			for i := 0; i < b.N; i++ {
				native += tc.prog.native(b, tc.host, false)
				pinned += tc.prog.native(b, tc.host, true)
				setup += noop.live(b, io.Discard)
				live += tc.prog.live(b, io.Discard)
				d, n := tc.prog.record(b, tp)
				rec, tapeBytes = rec+d, n
				t0 := time.Now()
				if _, err := replayer.Replay(context.Background(), replayer.Options{Tape: tp, Console: io.Discard}); err != nil {
					b.Fatal(err)
				}
				rep += time.Since(t0)
			}
			n := float64(b.N)
			b.ReportMetric(float64(native.Milliseconds())/n, "native-ms")
			b.ReportMetric(float64(pinned.Milliseconds())/n, "pinned-ms")
			b.ReportMetric(float64(setup.Milliseconds())/n, "setup-ms")
			b.ReportMetric(float64(live.Milliseconds())/n, "live-ms")
			b.ReportMetric(float64(live)/float64(pinned), "x-pinned-live")
			b.ReportMetric(float64(live-setup)/float64(pinned), "x-pinned-live-less-setup")
			b.ReportMetric(float64(rec)/float64(pinned), "x-pinned-recorded")
			b.ReportMetric(float64(rec)/float64(live), "x-recorded-vs-live")
			b.ReportMetric(float64(rep)/float64(rec), "x-replay-vs-record")
			b.ReportMetric(float64(tapeBytes)/(float64(rec)/float64(b.N)/1e9), "tape-B/s")
		})
	}
}

// fastCalls makes a program's system calls exception-less.
func fastCalls(p *linux.Program) { p.FastCalls = true }

// BenchmarkLinuxCallLoop is issue 29's system-call figure: a busybox
// shell loop of `echo x$i > f; read l < f` (about 23 system calls a round,
// no fork), natively pinned to one CPU, live, recorded and replayed, each
// with every call exiting and with exception-less calls (Program.FastCalls:
// the share answered without an exit, and the process's CPU time over the
// wall time while it ran: the companion polls on a second CPU), side by
// side in each iteration; and the live run's split of a call's time:
// the VMM's own work from the exit to the return, its work per exit in
// all, and a KVM_RUN's stay (the exit floor, with the few instructions of
// busybox between two calls). REPRISE_CALL_ROUNDS sets the rounds (20 000
// by default, the loop).
func BenchmarkLinuxCallLoop(b *testing.B) {
	kvmtest.Require(b)
	kvmtest.RequireTools(b, "taskset", "busybox")
	rounds := 20000
	if v := os.Getenv("REPRISE_CALL_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("REPRISE_CALL_ROUNDS=%q: want a positive number of rounds", v)
		}
		rounds = n
	}
	bb, err := exec.LookPath("busybox")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	loop := func(f string) string {
		return fmt.Sprintf("i=0; while [ $i -lt %d ]; do echo x$i > %s; read l < %s; i=$((i+1)); done; echo $l\n", rounds, f, f)
	}
	guestLoop, hostLoop := filepath.Join(dir, "loop.sh"), filepath.Join(dir, "hostloop.sh")
	if err := os.WriteFile(guestLoop, []byte(loop("/data/f")), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(hostLoop, []byte(loop(filepath.Join(dir, "f"))), 0o644); err != nil {
		b.Fatal(err)
	}
	prog := linuxProgram{"call-loop", []string{bb, "sh", "/data/loop.sh"}, []linux.Mount{{Guest: "/data/loop.sh", Host: guestLoop}}}
	tp := filepath.Join(dir, "loop.tape")
	var pinned, live, liveFast, rec, rep, recFast, repFast, served, vmmExit, inGuest, fastCPU time.Duration
	var calls, timed, entries, answered uint64
	for i := 0; i < b.N; i++ {
		pinned += prog.native(b, []string{bb, "sh", hostLoop}, true)
		d, ms, ks := prog.liveStats(b, io.Discard)
		live += d
		for _, n := range ks.Calls {
			calls += n
		}
		for _, sv := range ks.Served {
			served, timed = served+sv.Time, timed+sv.Calls
		}
		vmmExit += ms.VMMPerExit()
		inGuest, entries = inGuest+ms.InGuest, entries+ms.Entries
		cpu0 := cpuUsed(b, unix.RUSAGE_SELF)
		d, _, ks = prog.liveSetUp(b, io.Discard, fastCalls)
		liveFast, answered, fastCPU = liveFast+d, answered+ks.FastAnswered, fastCPU+cpuUsed(b, unix.RUSAGE_SELF)-cpu0
		d, _ = prog.record(b, tp)
		rec += d
		t0 := time.Now()
		replayLinux(b, tp, replayer.Options{})
		rep += time.Since(t0)
		d, _ = prog.recordSetUp(b, tp, fastCalls)
		recFast += d
		t0 = time.Now()
		replayLinux(b, tp, replayer.Options{})
		repFast += time.Since(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(calls)/n, "calls")
	b.ReportMetric(float64(pinned.Milliseconds())/n, "pinned-ms")
	b.ReportMetric(float64(live)/float64(pinned), "x-live")
	b.ReportMetric(float64(liveFast)/float64(pinned), "x-live-fast-calls")
	b.ReportMetric(float64(recFast)/float64(pinned), "x-recorded-fast-calls")
	b.ReportMetric(float64(repFast)/float64(pinned), "x-replayed-fast-calls")
	b.ReportMetric(float64(answered)/float64(max(calls, 1)), "share-answered-without-exit")
	b.ReportMetric(float64(fastCPU)/float64(liveFast), "fast-calls-cpu-per-wall")
	b.ReportMetric(float64(rec)/float64(pinned), "x-recorded")
	b.ReportMetric(float64(rep)/float64(pinned), "x-replayed")
	b.ReportMetric(float64(rep)/float64(rec), "x-replay-vs-record")
	b.ReportMetric(float64(live-pinned)/float64(max(calls, 1))/1e3, "live-us-per-call-over-native")
	b.ReportMetric(float64(served)/float64(max(timed, 1)), "vmm-per-call-ns")
	b.ReportMetric(float64(vmmExit)/n, "vmm-per-exit-ns")
	b.ReportMetric(float64(inGuest)/float64(max(entries, 1)), "kvm-run-per-entry-ns")
}

// BenchmarkLinuxSyscall times system-call round trips inside a program —
// getpid and a 4 KiB pread — natively and under reprise (every call
// exiting, and exception-less), with the program's own clock, and splits
// the exiting run's: the VMM's own time on each
// call (exit to return, Stats.Served), its time per exit in all (the vCPU
// loop's bookkeeping too), and the exit floor (a KVM_RUN's stay in the
// getpid-bound run: the guest's loop is a few instructions of it).
func BenchmarkLinuxSyscall(b *testing.B) {
	kvmtest.Require(b)
	kvmtest.RequireTools(b, "musl-gcc")
	dir := b.TempDir()
	bin := filepath.Join(dir, "syscalls")
	if out, err := exec.Command("musl-gcc", "-static", "-O2", "-o", bin, filepath.Join("..", "linux", "testdata", "syscalls.c")).CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, make([]byte, 4096), 0o644); err != nil {
		b.Fatal(err)
	}
	parse := func(out string) (getpid, pread float64) {
		m := regexp.MustCompile(`getpid (\d+) ns\npread4k (\d+) ns`).FindStringSubmatch(out)
		if m == nil {
			b.Fatalf("unexpected output %q", out)
		}
		g, _ := strconv.ParseFloat(m[1], 64)
		p, _ := strconv.ParseFloat(m[2], 64)
		return g, p
	}
	var ng, np, rg, rp, fg, fp, vg, vp, vexit, floor float64
	for i := 0; i < b.N; i++ {
		out, err := exec.Command(bin, file).Output()
		if err != nil {
			b.Fatal(err)
		}
		g, p := parse(string(out))
		ng, np = ng+g, np+p
		var console bytes.Buffer
		prog := linuxProgram{"syscalls", []string{bin, "/data/f"}, []linux.Mount{{Guest: "/data/f", Host: file}}}
		_, ms, ks := prog.liveStats(b, &console)
		g, p = parse(console.String())
		rg, rp = rg+g, rp+p
		vg += float64(ks.Served["getpid"].Each())
		vp += float64(ks.Served["pread64"].Each())
		vexit += float64(ms.VMMPerExit())
		floor += float64(ms.InGuest) / float64(max(ms.Entries, 1))
		console.Reset()
		prog.liveSetUp(b, &console, fastCalls)
		g, p = parse(console.String())
		fg, fp = fg+g, fp+p
	}
	n := float64(b.N)
	b.ReportMetric(vg/n, "vmm-getpid-ns")
	b.ReportMetric(vp/n, "vmm-pread4k-ns")
	b.ReportMetric(vexit/n, "vmm-per-exit-ns")
	b.ReportMetric(floor/n, "kvm-run-per-entry-ns")
	b.ReportMetric(ng/n, "native-getpid-ns")
	b.ReportMetric(rg/n, "reprise-getpid-ns")
	b.ReportMetric(np/n, "native-pread4k-ns")
	b.ReportMetric(rp/n, "reprise-pread4k-ns")
	b.ReportMetric(fg/n, "fast-calls-getpid-ns")
	b.ReportMetric(fp/n, "fast-calls-pread4k-ns")
}

// BenchmarkLinuxDiagnosis: what a Linux program's replay costs with the
// C library's lock probes (pthread mutexes, rwlocks, condition waits: an
// int3 and a single step per hit) and with timed sampling every
// millisecond (a kick, the registers, a CFI unwind), against the bare
// replay of the same tape, side by side: the lock-heavy program of the
// tests (internal/cprog/testdata/locks.c, glibc, 4 threads) and pigz -p 4.
func BenchmarkLinuxDiagnosis(b *testing.B) {
	kvmtest.RequireTools(b, "gcc", "pigz")
	dir := b.TempDir()
	bin := filepath.Join(dir, "locks")
	if out, err := exec.Command("gcc", "-O1", "-pthread", "-o", bin, filepath.Join("..", "internal", "cprog", "testdata", "locks.c")).CombinedOutput(); err != nil {
		b.Fatalf("gcc: %v: %s", err, out)
	}
	in := filepath.Join(dir, "in.txt")
	text := make([]byte, 0, 4<<20)
	for x := uint64(1); len(text) < cap(text); {
		x = x*6364136223846793005 + 1442695040888963407
		text = strconv.AppendUint(text, x>>40, 16)
	}
	if err := os.WriteFile(in, text, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, p := range []linuxProgram{
		{name: "locks", argv: []string{bin, "4", "2000"}},
		{name: "pigz", argv: []string{"/usr/bin/pigz", "-p", "4", "-c", in}, files: []linux.Mount{{Guest: in, Host: in}}},
	} {
		b.Run(p.name, func(b *testing.B) {
			tp := filepath.Join(b.TempDir(), p.name+".tape")
			p.record(b, tp)
			rec, err := replayer.OpenRecording(tp)
			if err != nil {
				b.Fatal(err)
			}
			objs, err := rec.Objects()
			rec.Close()
			if err != nil {
				b.Fatal(err)
			}
			set := pthreadSet(b, objs)
			var bare, probed, sampled time.Duration
			var hits, samples uint64
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				replayLinux(b, tp, replayer.Options{})
				bare += time.Since(t0)
				t0 = time.Now()
				rp := replayLinux(b, tp, replayer.Options{Set: set, OnHit: func(replayer.Hit) error { hits++; return nil }})
				probed += time.Since(t0)
				t0 = time.Now()
				rs := replayLinux(b, tp, replayer.Options{SamplePeriod: time.Millisecond, OnSample: func(*replayer.Sample, vmm.GuestMemory) error { return nil }})
				sampled += time.Since(t0)
				samples += rs.Stats.Samples
				_ = rp
			}
			b.ReportMetric(float64(probed)/float64(bare), "x-bare-locks")
			b.ReportMetric(float64(hits)/float64(b.N), "hits/replay")
			if hits > 0 {
				b.ReportMetric(float64((probed-bare).Nanoseconds())/float64(hits)/1e3, "µs/hit")
			}
			b.ReportMetric(float64(sampled)/float64(bare), "x-bare-sampled")
			b.ReportMetric(float64(samples)/float64(b.N), "samples/replay")
		})
	}
}

// pthreadSet is the probe set --locks uses for a program of objs.
func pthreadSet(b *testing.B, objs []*elffile.File) *probes.Set {
	b.Helper()
	specs, err := probes.Available(lockops.PthreadProbes(probes.Defines(objs, "gnu_get_libc_version")), objs)
	if err != nil {
		b.Fatal(err)
	}
	set, err := probes.NewSet(specs)
	if err != nil {
		b.Fatal(err)
	}
	return set
}

func replayLinux(b *testing.B, path string, o replayer.Options) *replayer.Result {
	b.Helper()
	o.Tape, o.Console = path, io.Discard
	res, err := replayer.Replay(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	return res
}
