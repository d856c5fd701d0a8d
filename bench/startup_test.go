package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// repriseBinary builds reprise into dir (REPRISE_TEST_BINARY names one
// built already).
func repriseBinary(tb testing.TB, dir string) string {
	tb.Helper()
	if prebuilt := os.Getenv("REPRISE_TEST_BINARY"); prebuilt != "" {
		return prebuilt
	}
	bin := filepath.Join(dir, "reprise")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/reprise").CombinedOutput(); err != nil {
		tb.Fatalf("building reprise: %v\n%s", err, out)
	}
	return bin
}

// timed runs argv and returns its wall time.
func timed(tb testing.TB, argv ...string) time.Duration {
	tb.Helper()
	t0 := time.Now()
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		tb.Fatalf("%q: %v\n%s", argv, err, out)
	}
	return time.Since(t0)
}

// BenchmarkStartUp is what a program that does nothing costs under
// reprise beyond its native run — the whole command, as a user runs it:
// `reprise run`, `record` and `replay` of a static (busybox) and a
// dynamic (/bin/true, glibc) `true`, with the default RAM and with 1 GiB,
// each side by side with the native run in every iteration. Issue 29's
// goal: run within 20 ms of native (the *-over-native-ms metrics: the
// medians of the iterations, which a noisy host's outliers, tens of
// milliseconds now and then, would move if they were means).
func BenchmarkStartUp(b *testing.B) {
	kvmtest.Require(b)
	kvmtest.RequireTools(b, "busybox")
	dir := b.TempDir()
	reprise := repriseBinary(b, dir)
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		b.Fatal(err)
	}
	tp := filepath.Join(dir, "t.tape")
	for _, prog := range []struct {
		name string
		argv []string
	}{{"static", []string{busybox, "true"}}, {"dynamic", []string{"/bin/true"}}} {
		for _, mem := range []string{"256M", "1G"} {
			b.Run(prog.name+"/"+mem, func(b *testing.B) {
				var native, run, rec, rep []time.Duration
				for b.Loop() {
					native = append(native, timed(b, prog.argv...))
					run = append(run, timed(b, append([]string{reprise, "run", "--mem", mem, "--"}, prog.argv...)...))
					rec = append(rec, timed(b, append([]string{reprise, "record", "--mem", mem, "-o", tp, "--force", "--"}, prog.argv...)...))
					rep = append(rep, timed(b, reprise, "replay", tp))
				}
				ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
				n := median(native)
				b.ReportMetric(ms(n), "native-ms")
				b.ReportMetric(ms(median(run)-n), "run-over-native-ms")
				b.ReportMetric(ms(median(rec)-n), "record-over-native-ms")
				b.ReportMetric(ms(median(rep)-n), "replay-over-native-ms")
			})
		}
	}
}

// median is the middle of ds (the mean of the two middle ones for an
// even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
