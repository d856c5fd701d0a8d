package bench

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// callLine is one cache line of a page two CPUs share to pass a call: the
// caller writes the arguments and then posts the call's ticket, the
// server answers with the result and then the ticket.
type callLine struct {
	posted   atomic.Uint64
	args     [4]uint64
	ret      uint64
	answered atomic.Uint64
}

// spinBudget is how long a caller would spin for its answer before giving
// up and making the exit: a little less than the exit itself costs on PVM
// hosts (25.8 µs, BenchmarkRoundTrip).
const spinBudget = 20 * time.Microsecond

// BenchmarkCallPage measures the floor of the exception-less system calls
// issue 29 proposes (FlexSC, OSDI '10) on this host, before any of it is
// built: a caller pinned to one CPU posts a call in a shared cache line and
// spins; a server thread pinned to the other, polling the line, reads the
// arguments and answers. No KVM is in it — in the design, the caller is
// the vCPU in the SYSCALL stub and the server a thread of the VMM, the
// same two CPUs touching the same line — so it runs on any host with two
// CPUs. It reports the round trip (against an exit's 25.8 µs on PVM
// hosts), the share of round trips past spinBudget (those calls would
// exit), the longest, and the server's CPU time over the wall time: it
// burns a CPU while it polls. Run it under `stress-ng --cpu 2 --vm 1` too:
// a busy host preempts the poller.
func BenchmarkCallPage(b *testing.B) {
	if runtime.NumCPU() < 2 {
		b.Skip("one CPU: the caller and the server need one each")
	}
	var (
		line       callLine
		stop       atomic.Bool
		wg         sync.WaitGroup
		serverCPU  time.Duration
		serverWall time.Duration
	)
	pin := func(cpu int) {
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			b.Errorf("pinning to CPU %d: %v", cpu, err)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		pin(1)
		defer runtime.UnlockOSThread()
		cpu0, wall0 := cpuUsed(b, unix.RUSAGE_THREAD), time.Now()
		var last uint64
		for !stop.Load() {
			t := line.posted.Load()
			if t == last {
				continue
			}
			line.ret = line.args[0] + line.args[1] + line.args[2] + line.args[3]
			line.answered.Store(t)
			last = t
		}
		serverCPU, serverWall = cpuUsed(b, unix.RUSAGE_THREAD)-cpu0, time.Since(wall0)
	}()

	pin(0)
	defer runtime.UnlockOSThread()
	var over int
	var longest time.Duration
	b.ResetTimer()
	for i := range b.N {
		t := uint64(i) + 1
		t0 := time.Now()
		line.args = [4]uint64{t, 1, 2, 3}
		line.posted.Store(t)
		for line.answered.Load() != t {
		}
		d := time.Since(t0)
		if line.ret != t+6 {
			b.Fatalf("call %d answered %d", t, line.ret)
		}
		if d > spinBudget {
			over++
		}
		longest = max(longest, d)
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	b.ReportMetric(float64(over)/float64(b.N), "share-past-budget")
	b.ReportMetric(float64(longest.Microseconds()), "longest-µs")
	b.ReportMetric(float64(serverCPU)/float64(max(serverWall, 1)), "server-cpu-share")
}

// cpuUsed is the CPU time so far of the calling thread (unix.RUSAGE_THREAD)
// or the whole process (unix.RUSAGE_SELF).
func cpuUsed(tb testing.TB, who int) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(who, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
