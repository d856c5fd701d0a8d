// Package bench measures the machine: exit and system-call round trips,
// interrupt cost, the guest against native code, and the software branch
// counter's cost. Every figure that compares two things measures both side
// by side in the same benchmark iteration, so host noise hits both.
//
//	go test -run '^$' -bench . -benchtime 3x ./bench
//
// docs/benchmarks.md records the latest figures.
package bench

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/vmm"
)

func kit(tb testing.TB) *guest.Kit {
	tb.Helper()
	kvmtest.Require(tb)
	k, err := guest.Build(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// boot runs image with cmdline and timer rate hz (-1: no timer) and fails
// tb unless the guest exits 0.
func boot(tb testing.TB, image, cmdline string, hz int) (*vmm.Result, string) {
	tb.Helper()
	img, err := elffile.OpenImage(image)
	if err != nil {
		tb.Fatal(err)
	}
	var out bytes.Buffer
	m, err := vmm.New(vmm.Config{Image: img, Cmdline: cmdline, Console: &out, TimerHz: hz})
	if err != nil {
		tb.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := m.Run(ctx)
	if err != nil || res.Status != 0 {
		tb.Fatalf("%s %q: status %v, err %v\n%s", image, cmdline, res, err, out.String())
	}
	return res, out.String()
}

// marked is the host time of the measured part of a run: the bench
// workload's own loop (marks 1 and 2), else the whole workload (the kit's
// dispatcher marks), else the whole run.
func marked(res *vmm.Result) time.Duration {
	if d, ok := res.Between(1, 2); ok {
		return d
	}
	if d, ok := res.Between(abi.MarkWorkloadStart, abi.MarkWorkloadEnd); ok {
		return d
	}
	return res.Elapsed
}

func perOp(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / float64(n) / 1e3 }

// BenchmarkRoundTrip: a guest exit to the VMM and back from CPL3 and from
// CPL0, and a system call (ud2 trap into the guest kernel and iretq).
func BenchmarkRoundTrip(b *testing.B) {
	k := kit(b)
	for _, tc := range []struct {
		mode string
		n    int
	}{{"exit-cpl3", 20000}, {"exit-cpl0", 100000}, {"syscall", 10000}} {
		b.Run(tc.mode, func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				res, _ := boot(b, k.Image(), fmt.Sprintf("bench %s n=%d", tc.mode, tc.n), -1)
				total += marked(res)
			}
			b.ReportMetric(perOp(total, tc.n*b.N), "µs/op")
		})
	}
}

// BenchmarkInterruptInjection: the round trip of one interrupt injected
// into the guest kernel — KVM_INTERRUPT, delivery through the IDT, the
// kernel's IRQ path, iretq — as the difference between N software-raised
// interrupts (each one CPL0 exit plus one injection) and N plain CPL0 exits,
// measured side by side.
func BenchmarkInterruptInjection(b *testing.B) {
	k := kit(b)
	const n = 20000
	var irq, exit time.Duration
	for i := 0; i < b.N; i++ {
		ri, _ := boot(b, k.Image(), fmt.Sprintf("bench irq n=%d", n), -1)
		re, _ := boot(b, k.Image(), fmt.Sprintf("bench exit-cpl0 n=%d", n), -1)
		irq += marked(ri)
		exit += marked(re)
	}
	b.ReportMetric(perOp(irq-exit, n*b.N), "µs/injection")
	b.ReportMetric(perOp(irq, n*b.N), "µs/(exit+injection)")
}

// BenchmarkTimerTick: the cost of one timer interrupt delivered to a
// CPU-bound CPL3 thread (signal kick, EINTR, KVM_INTERRUPT, the guest
// kernel's tick handler, iretq), from the same work run with no timer and
// with a 1 kHz timer, side by side.
func BenchmarkTimerTick(b *testing.B) {
	k := kit(b)
	const cmd = "cpu digits=20000"
	var quiet, ticking time.Duration
	var ticks uint64
	for i := 0; i < b.N; i++ {
		r0, _ := boot(b, k.Image(), cmd, -1)
		r1, _ := boot(b, k.Image(), cmd, 1000)
		quiet += marked(r0)
		ticking += marked(r1)
		ticks += r1.Stats.Injected
	}
	b.ReportMetric(float64((ticking-quiet).Nanoseconds())/float64(ticks)/1e3, "µs/tick")
	b.ReportMetric(float64(ticks)/float64(b.N), "ticks/run")
	b.ReportMetric(float64(ticking)/float64(quiet), "x-slowdown@1kHz")
}

var nativeElapsed = regexp.MustCompile(`elapsed_ns=(\d+)`)

// BenchmarkCPUGuestVsNative: the cpu workload's core in the guest (plain
// and swbc-instrumented builds) against the same C file built as a host
// program, at the default 100 Hz tick.
func BenchmarkCPUGuestVsNative(b *testing.B) {
	k := kit(b)
	const digits = "digits=20000"
	var native, plain, swbc time.Duration
	for i := 0; i < b.N; i++ {
		out, err := exec.Command(k.NativeCPU(), digits).Output()
		if err != nil {
			b.Fatal(err)
		}
		m := nativeElapsed.FindSubmatch(out)
		if m == nil {
			b.Fatalf("cpu-native printed no elapsed_ns:\n%s", out)
		}
		ns, _ := strconv.ParseInt(string(m[1]), 10, 64)
		native += time.Duration(ns)
		rp, _ := boot(b, k.PlainImage(), "cpu "+digits, vmm.DefaultTimerHz)
		rs, _ := boot(b, k.Image(), "cpu "+digits, vmm.DefaultTimerHz)
		plain += marked(rp)
		swbc += marked(rs)
	}
	b.ReportMetric(float64(plain)/float64(native), "x-native(plain)")
	b.ReportMetric(float64(swbc)/float64(native), "x-native(swbc)")
}

// BenchmarkSWBC: the software branch counter's cost — the same workloads
// built without a counter, with the register counter (the default kit) and
// with the trace-pc hook, side by side. branchy is the branch-dense code
// real programs are made of.
func BenchmarkSWBC(b *testing.B) {
	k := kit(b)
	for _, cmd := range []string{"cpu digits=20000", "profile rounds=200", "syn_cont iters=300 work=8000", "branchy rounds=5"} {
		b.Run(cmd, func(b *testing.B) {
			var plain, reg, hook time.Duration
			for i := 0; i < b.N; i++ {
				rp, _ := boot(b, k.PlainImage(), cmd, vmm.DefaultTimerHz)
				rr, _ := boot(b, k.Image(), cmd, vmm.DefaultTimerHz)
				rh, _ := boot(b, k.HookImage(), cmd, vmm.DefaultTimerHz)
				plain += marked(rp)
				reg += marked(rr)
				hook += marked(rh)
			}
			b.ReportMetric(float64(reg)/float64(plain), "x-r15")
			b.ReportMetric(float64(hook)/float64(plain), "x-tracepc")
		})
	}
}
