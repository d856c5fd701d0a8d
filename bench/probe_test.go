package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/vmm"
)

func plan(b *testing.B, image string, specs ...string) *probes.Plan {
	img, err := elffile.OpenImage(image)
	if err != nil {
		b.Fatal(err)
	}
	s, err := probes.ParseSpecs(specs)
	if err != nil {
		b.Fatal(err)
	}
	p, err := probes.Resolve(s, img)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func replayWith(b *testing.B, path string, o replayer.Options) *replayer.Result {
	o.Tape, o.Console = path, io.Discard
	res, err := replayer.Replay(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// BenchmarkProbeHit: the cost of one probe hit, from a replay with
// lock/unlock probes against the same replay without, side by side: with
// the sites patched as the replay chooses (out to the probe port where a
// site allows it: one CPL3 exit, then the out-of-line copy) and with int3
// only (the trap into the guest kernel, its #BP path, the hypercall exit);
// and, in the same run, a bare CPL3 exit for the ratio.
func BenchmarkProbeHit(b *testing.B) {
	k := kit(b)
	path := filepath.Join(b.TempDir(), "syn.tape")
	recordTo(b, k.Image(), "syn_cont iters=300 work=8000", path)
	p := plan(b, k.Image(), "lock=mutex_lock m=arg0", "unlock=mutex_unlock m=arg0")
	var bare, probed, int3, exit time.Duration
	var hits uint64
	const exits = 20000
	onHit := func(replayer.Hit) error { return nil }
	for i := 0; i < b.N; i++ {
		rb := replayWith(b, path, replayer.Options{})
		rp := replayWith(b, path, replayer.Options{Plan: p, OnHit: onHit})
		ri := replayWith(b, path, replayer.Options{Plan: p, OnHit: onHit, Int3Probes: true})
		re, _ := boot(b, k.Image(), fmt.Sprintf("bench exit-cpl3 n=%d", exits), -1)
		for _, s := range rp.ProbeSites {
			if s.Patch != probes.PatchExit {
				b.Fatalf("probe site %s has %v, not an exit: %s", s.Where, s.Patch, s.Why)
			}
		}
		bare += marked(rb.Result)
		probed += marked(rp.Result)
		int3 += marked(ri.Result)
		hits += rp.Stats.ProbeHits
		exit += marked(re)
	}
	perHit := float64((probed - bare).Nanoseconds()) / float64(hits) / 1e3
	perInt3 := float64((int3 - bare).Nanoseconds()) / float64(hits) / 1e3
	perExit := perOp(exit, exits*b.N)
	b.ReportMetric(perHit, "µs/hit")
	b.ReportMetric(perInt3, "µs/hit-int3")
	b.ReportMetric(perExit, "µs/exit-cpl3")
	b.ReportMetric(perHit/perExit, "x-exit")
	b.ReportMetric(perInt3/perExit, "x-exit-int3")
	b.ReportMetric(float64(hits)/float64(b.N), "hits/replay")
}

// BenchmarkSamplingReplay: replay time with deterministic sampling every
// 800K, 400K and 100K user-mode branch counts against the same replay
// without, side by side (InSight Table 2 sampled by CPU cycles).
func BenchmarkSamplingReplay(b *testing.B) {
	k := kit(b)
	path := filepath.Join(b.TempDir(), "profile.tape")
	recordTo(b, k.Image(), "profile rounds=400", path)
	for _, every := range []uint64{800_000, 400_000, 100_000} {
		b.Run(fmt.Sprintf("every=%dK", every/1000), func(b *testing.B) {
			var bare, sampled time.Duration
			var samples uint64
			for i := 0; i < b.N; i++ {
				rb := replayWith(b, path, replayer.Options{})
				rs := replayWith(b, path, replayer.Options{SampleEvery: every,
					OnSample: func(*replayer.Sample, vmm.GuestMemory) error { return nil }})
				bare += marked(rb.Result)
				sampled += marked(rs.Result)
				samples += rs.Stats.Samples
			}
			b.ReportMetric(float64(sampled)/float64(bare), "x-unsampled")
			b.ReportMetric(float64(samples)/float64(b.N), "samples/replay")
		})
	}
}
