package bench

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprise-vm/reprise/elfimage"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

func recordTo(tb testing.TB, image, cmdline, path string) *recorder.Result {
	tb.Helper()
	img, err := elfimage.Open(image)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := recorder.Record(context.Background(), recorder.Options{
		Image: img, Cmdline: cmdline, Output: path, Console: io.Discard,
	})
	if err != nil || res.Status != 0 {
		tb.Fatalf("recording %q: %v", cmdline, err)
	}
	return res
}

func replayOf(tb testing.TB, path string) *replayer.Result {
	tb.Helper()
	res, err := replayer.Replay(context.Background(), replayer.Options{Tape: path, Console: io.Discard})
	if err != nil {
		tb.Fatalf("replaying %s: %v", path, err)
	}
	return res
}

// BenchmarkRecordOverhead: the same workload recorded and not recorded,
// side by side (default 100 Hz tick, swbc positions), timed over the
// workload itself; plus the tape it costs per second of guest execution.
func BenchmarkRecordOverhead(b *testing.B) {
	k := kit(b)
	for _, cmd := range []string{"cpu digits=20000", "clock", "syn_cont iters=300 work=8000"} {
		b.Run(cmd, func(b *testing.B) {
			var live, rec time.Duration
			var eventBytes int64
			for i := 0; i < b.N; i++ {
				rl, _ := boot(b, k.Image(), cmd, vmm.DefaultTimerHz)
				path := filepath.Join(b.TempDir(), "run.tape")
				rr := recordTo(b, k.Image(), cmd, path)
				live += marked(rl)
				rec += marked(rr.Result)
				s, err := tape.Summarize(path)
				if err != nil {
					b.Fatal(err)
				}
				eventBytes += s.EventBytes()
			}
			b.ReportMetric(float64(rec)/float64(live), "x-recorded")
			b.ReportMetric(float64(eventBytes)/rec.Seconds(), "tape-B/s")
		})
	}
}

// BenchmarkReplaySpeed: replay time against record time for the same tape.
// An idle-heavy workload replays faster (idle time is skipped); a
// CPU-bound one at about the recorded speed.
func BenchmarkReplaySpeed(b *testing.B) {
	k := kit(b)
	for _, cmd := range []string{"periodic bg=0 count=100", "cpu digits=20000", "cpu digits=48000", "syn_cont iters=300 work=8000"} {
		b.Run(cmd, func(b *testing.B) {
			var rec, rep time.Duration
			for i := 0; i < b.N; i++ {
				path := filepath.Join(b.TempDir(), "run.tape")
				rr := recordTo(b, k.Image(), cmd, path)
				rp := replayOf(b, path)
				rec += marked(rr.Result)
				rep += marked(rp.Result)
			}
			b.ReportMetric(float64(rep)/float64(rec), "x-of-record")
		})
	}
}
