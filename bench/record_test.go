package bench

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

func recordTo(tb testing.TB, image, cmdline, path string) *recorder.Result {
	return recordHost(tb, image, cmdline, path, recorder.HostFull)
}

func recordHost(tb testing.TB, image, cmdline, path string, host recorder.HostMode) *recorder.Result {
	tb.Helper()
	img, err := elffile.OpenImage(image)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := recorder.Record(context.Background(), recorder.Options{
		Image: img, Cmdline: cmdline, Output: path, Console: io.Discard, Host: host,
		Overwrite: true, // each iteration records to the same path
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
	for _, cmd := range []string{"cpu digits=20000", "clock reads=100000000", "syn_cont iters=300 work=8000", "branchy rounds=5"} {
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

// BenchmarkHostTracing: the cost of the host view (docs/architecture.md, "The
// host view") — the same workload recorded with no host view, with the VMM's
// timestamps only, and with host scheduling from tracefs too, side by side,
// timed over the workload; plus the host view's bytes per second of guest
// execution. Without tracefs the full mode equals vmm and says so.
func BenchmarkHostTracing(b *testing.B) {
	k := kit(b)
	modes := []recorder.HostMode{recorder.HostOff, recorder.HostVMM, recorder.HostFull}
	for _, cmd := range []string{"syn_cont iters=300 work=8000", "clock", "cpu digits=20000", "periodic bg=2 count=50"} {
		b.Run(cmd, func(b *testing.B) {
			took := map[recorder.HostMode]time.Duration{}
			var hostBytes int64
			var missing string
			for i := 0; i < b.N; i++ {
				for _, mode := range modes {
					path := filepath.Join(b.TempDir(), "run.tape")
					rr := recordHost(b, k.Image(), cmd, path, mode)
					took[mode] += marked(rr.Result)
					if mode == recorder.HostFull {
						missing = rr.HostMissing
						hostBytes += hostFrameBytes(b, path)
					}
				}
			}
			if missing != "" {
				b.Logf("%s", missing)
			}
			b.ReportMetric(float64(took[recorder.HostVMM])/float64(took[recorder.HostOff]), "x-vmm")
			b.ReportMetric(float64(took[recorder.HostFull])/float64(took[recorder.HostOff]), "x-full")
			b.ReportMetric(float64(hostBytes)/took[recorder.HostFull].Seconds(), "host-B/s")
		})
	}
}

// hostFrameBytes is the size of a tape's host frames.
func hostFrameBytes(tb testing.TB, path string) int64 {
	r, err := tape.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	var n int64
	r.OnHost(func(_ uint32, body []byte) error { n += int64(len(body)) + 20; return nil })
	for {
		if _, err := r.Next(); err != nil {
			return n
		}
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
