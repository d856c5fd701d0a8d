package bench

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/reprise-vm/reprise/cost"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/replayer"
	"github.com/reprise-vm/reprise/vmm"
)

// shapesCmd is the shapes workload at about 2 s of guest time: enough
// samples every 10K counts for its straight-line function (one count a
// unit) and, every millisecond, about 2 000 in all.
const shapesCmd = "shapes rounds=300000"

// BenchmarkProfileShares: how far each way to sample the shapes workload
// lands from the self shares it is built with — the largest error of its
// four functions, in percentage points — and what sampling costs, a
// sampled replay's time over a bare one's, side by side in each
// iteration. Every N counts of the register counter (deterministic), one
// replay's samples are weighed three ways: each sample one (reprise
// before weighing), by its count's instructions (what a counter of every
// instruction would give), by its estimated cycles (reprise profile now);
// beside them the trace-pc kit's samples, one each. Every millisecond of
// replay time (--sample-period: different in every replay) the samples
// fall by time.
func BenchmarkProfileShares(b *testing.B) {
	k := kit(b)
	dir := b.TempDir()
	tapes := map[string]string{k.Image(): filepath.Join(dir, "r15.tape"), k.HookImage(): filepath.Join(dir, "tracepc.tape")}
	for image, path := range tapes {
		recordTo(b, image, shapesCmd, path)
	}
	_, out := boot(b, k.Image(), "shapes rounds=100", vmm.DefaultTimerHz)
	want := constructedShares(b, guest.ParseTruth(out))
	r15, hook := sharesOf(b, k.Image(), false), sharesOf(b, k.HookImage(), true)
	for _, every := range []uint64{10_007, 100_003} {
		b.Run(fmt.Sprintf("every=%dK", every/1000), func(b *testing.B) {
			var bare, sampled time.Duration
			var samples uint64
			var counts, insts, cycles, tracepc shares
			for i := 0; i < b.N; i++ {
				rb := replayWith(b, tapes[k.Image()], replayer.Options{})
				rs := replayWith(b, tapes[k.Image()], replayer.Options{SampleEvery: every, OnSample: r15.add(&counts, &insts, &cycles)})
				replayWith(b, tapes[k.HookImage()], replayer.Options{SampleEvery: every, OnSample: hook.add(&tracepc, nil, nil)})
				bare += marked(rb.Result)
				sampled += marked(rs.Result)
				samples += rs.Stats.Samples
			}
			b.ReportMetric(float64(sampled)/float64(bare), "x-unsampled")
			b.ReportMetric(float64(samples)/float64(b.N), "samples/replay")
			b.ReportMetric(counts.err(want), "err-counts-pts")
			b.ReportMetric(insts.err(want), "err-insts-pts")
			b.ReportMetric(cycles.err(want), "err-cycles-pts")
			b.ReportMetric(tracepc.err(want), "err-tracepc-pts")
		})
	}
	b.Run("period=1ms", func(b *testing.B) {
		var bare, sampled time.Duration
		var samples uint64
		var timed shares
		for i := 0; i < b.N; i++ {
			rb := replayWith(b, tapes[k.Image()], replayer.Options{})
			rs := replayWith(b, tapes[k.Image()], replayer.Options{SamplePeriod: time.Millisecond, OnSample: r15.add(&timed, nil, nil)})
			bare += marked(rb.Result)
			sampled += marked(rs.Result)
			samples += rs.Stats.Samples
		}
		b.ReportMetric(float64(sampled)/float64(bare), "x-unsampled")
		b.ReportMetric(float64(samples)/float64(b.N), "samples/replay")
		b.ReportMetric(timed.err(want), "err-time-pts")
	})
}

// constructedShares reads the shapes workload's self share of each
// function, in percent, from its truth lines.
func constructedShares(tb testing.TB, truths []guest.Truth) map[string]float64 {
	tb.Helper()
	want := map[string]float64{}
	for _, t := range truths {
		if f, ok := t["func"]; ok {
			v, err := strconv.ParseFloat(t["self_pct"], 64)
			if err != nil {
				tb.Fatalf("truth %v: %v", t, err)
			}
			want[f] = v
		}
	}
	if len(want) != 4 {
		tb.Fatalf("the shapes workload named %d functions, not 4: %v", len(want), truths)
	}
	return want
}

// shares is a profile's self weight per function.
type shares struct {
	byFunc map[string]float64
	all    float64
}

func (s *shares) addTo(fn string, w float64) {
	if s.byFunc == nil {
		s.byFunc = map[string]float64{}
	}
	s.byFunc[fn] += w
	s.all += w
}

// err is the largest distance, in percentage points, of a function's
// share from want.
func (s *shares) err(want map[string]float64) float64 {
	var worst float64
	for fn, pct := range want {
		worst = max(worst, math.Abs(100*s.byFunc[fn]/s.all-pct))
	}
	return worst
}

// sampleShares attributes samples to the function their code is in (self)
// in one image.
type sampleShares struct {
	img   *elffile.Image
	model *cost.Model
}

func sharesOf(tb testing.TB, image string, hook bool) *sampleShares {
	tb.Helper()
	img, err := elffile.OpenImage(image)
	if err != nil {
		tb.Fatal(err)
	}
	var at uint64
	if hook {
		sym, _ := img.Lookup(vmm.SWBCHookSymbol)
		at = sym.Addr
	}
	return &sampleShares{img: img, model: cost.New(img, at)}
}

// add returns a sample handler that adds each sample to counts (one
// each) and, if not nil, to insts and cycles by its count's estimate.
func (s *sampleShares) add(counts, insts, cycles *shares) replayer.SampleHandler {
	return func(smp *replayer.Sample, _ vmm.GuestMemory) error {
		fn := fmt.Sprintf("%#x", smp.RIP)
		if sym, _, ok := s.img.Resolve(smp.RIP); ok {
			fn = sym.Name
		}
		counts.addTo(fn, 1)
		if insts != nil {
			insts.addTo(fn, s.model.Interval(smp.RIP).Instructions)
		}
		if cycles != nil {
			cycles.addTo(fn, smp.Cost)
		}
		return nil
	}
}
