package bench

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/eventdb"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/cprog"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/replayer"
)

// BenchmarkCheckpoints, on a long recording (syn_cont, about a minute of
// guest time: REPRISE_BENCH_LONG_ITERS iterations, default 3000):
//   - checkpoints: a replay writing one every 1 s, 5 s and 30 s of record
//     time against the bare replay, side by side, and the bytes each adds;
//   - the start of a replay from the middle checkpoint: its set-up (tape
//     read to there, checkpoint loaded and checked, machine restored);
//   - a replay with the kit's lock probes and sampling into a DB,
//     sequential against --jobs 2 (segments between 5 s checkpoints).
func BenchmarkCheckpoints(b *testing.B) {
	k := kit(b)
	iters := 3000
	if v, err := strconv.Atoi(os.Getenv("REPRISE_BENCH_LONG_ITERS")); err == nil && v > 0 {
		iters = v
	}
	dir := b.TempDir()
	path := filepath.Join(dir, "long.tape")
	recordTo(b, k.Image(), "syn_cont iters="+strconv.Itoa(iters)+" work=200000", path)
	replay := func(o replayer.Options) (*replayer.Result, time.Duration) {
		o.Tape, o.Console = path, io.Discard
		t0 := time.Now()
		res, err := replayer.Replay(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		return res, time.Since(t0)
	}
	for i := 0; i < b.N; i++ {
		_, bare := replay(replayer.Options{})
		for _, every := range []time.Duration{time.Second, 5 * time.Second, 30 * time.Second} {
			ck := filepath.Join(dir, "every-"+every.String()+".ckpt")
			res, with := replay(replayer.Options{Checkpoints: ck, CheckpointEvery: every})
			var bytes int64
			for _, c := range res.Checkpoints {
				bytes += c.Bytes
			}
			n := float64(len(res.Checkpoints))
			b.ReportMetric(float64(with)/float64(bare), "x-bare-ckpt-"+every.String())
			b.ReportMetric(n, "ckpts-"+every.String())
			b.ReportMetric(float64(bytes)/n/1024, "KiB/ckpt-"+every.String())
			if every == 5*time.Second {
				mid := len(res.Checkpoints) / 2
				r, wall := replay(replayer.Options{Checkpoints: ck, Start: mid, Until: mid + 1})
				b.ReportMetric(float64(wall-r.Elapsed)/float64(time.Millisecond), "ms-start-mid")
				b.ReportMetric(float64(r.Elapsed)/float64(time.Millisecond), "ms-one-segment")
				b.ReportMetric(float64(bare)/float64(time.Second), "s-bare-replay")
				seq, par := splitReplay(b, path, ck, k.Image())
				b.ReportMetric(float64(seq)/float64(par), "x-faster-jobs-2")
				b.ReportMetric(float64(seq)/float64(time.Second), "s-db-sequential")
			}
		}
	}
}

// splitReplay times a replay with lock probes and sampling into a DB,
// sequential and with two jobs.
func splitReplay(b *testing.B, path, ck, image string) (seq, par time.Duration) {
	img, err := elffile.OpenImage(image)
	if err != nil {
		b.Fatal(err)
	}
	specs, err := probes.ParseSpecs(guest.LockProbes)
	if err != nil {
		b.Fatal(err)
	}
	plan, err := probes.Resolve(specs, img)
	if err != nil {
		b.Fatal(err)
	}
	o := replayer.Options{Tape: path, Console: io.Discard, Image: img, Plan: plan, SampleEvery: 1_000_000, Checkpoints: ck}
	for _, jobs := range []int{0, 2} {
		db, err := eventdb.Open(filepath.Join(b.TempDir(), "db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if jobs == 0 {
			_, _, err = replayer.ToDB(context.Background(), o, db)
		} else {
			_, _, err = replayer.ParallelToDB(context.Background(), o, db, jobs)
		}
		d := time.Since(t0)
		db.Close()
		if err != nil {
			b.Fatal(err)
		}
		if jobs == 0 {
			seq = d
		} else {
			par = d
		}
	}
	return seq, par
}

// BenchmarkRecordCheckpoints is what checkpoints taken while recording
// (record --checkpoint-every) add to a recording, side by side with the
// same recording without them: the kit's syn_cont for about 12 s of guest
// time with one every 1 s and 5 s, and a Linux program (the pipeline test
// program, glibc, threads, a child and a pipe) with one every 100 ms. The
// guest's clock stands still while one is written: the cost is host time.
func BenchmarkRecordCheckpoints(b *testing.B) {
	k := kit(b)
	img, err := elffile.OpenImage(k.Image())
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	record := func(o recorder.Options, every time.Duration) (time.Duration, []checkpoint.Summary) {
		o.Output, o.Console, o.Host, o.Overwrite = filepath.Join(dir, "r.tape"), io.Discard, recorder.HostOff, true
		if every > 0 {
			o.CheckpointEvery, o.Checkpoints = every, filepath.Join(dir, "r.ckpt")
			os.Remove(o.Checkpoints)
		}
		t0 := time.Now()
		res, err := recorder.Record(context.Background(), o)
		if err != nil || res.Status != 0 {
			b.Fatalf("recording: %v", err)
		}
		return time.Since(t0), res.Checkpoints
	}
	report := func(name string, plain, with time.Duration, taken []checkpoint.Summary) {
		var bytes int64
		for _, c := range taken {
			bytes += c.Bytes
		}
		n := float64(max(len(taken), 1))
		b.ReportMetric(float64(with)/float64(plain), "x-plain-"+name)
		b.ReportMetric(float64(with-plain)/n/float64(time.Millisecond), "ms/ckpt-"+name)
		b.ReportMetric(float64(bytes)/n/1024, "KiB/ckpt-"+name)
	}
	bin := cprog.Build(b, "gcc", "pipeline", "-O1", "-pthread")
	prog := linuxProgram{name: "pipeline", argv: []string{bin, "400"}}.program(b)
	for i := 0; i < b.N; i++ {
		kitRun := recorder.Options{Image: img, Cmdline: "syn_cont iters=600 work=200000"}
		plain, _ := record(kitRun, 0)
		for _, every := range []time.Duration{time.Second, 5 * time.Second} {
			with, taken := record(kitRun, every)
			report("kit-"+every.String(), plain, with, taken)
		}
		linuxRun := recorder.Options{Linux: &prog, MemBytes: linux.DefaultMemBytes}
		plain, _ = record(linuxRun, 0)
		with, taken := record(linuxRun, 100*time.Millisecond)
		report("linux-100ms", plain, with, taken)
	}
}
