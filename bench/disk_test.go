package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/vmm"
)

// BenchmarkDiskThroughput: a whole-disk read and a write+verify, recorded
// and not recorded, side by side; MiB/s of guest disk traffic.
func BenchmarkDiskThroughput(b *testing.B) {
	k := kit(b)
	dir := b.TempDir()
	base := filepath.Join(dir, "base.img")
	data := make([]byte, 32<<20)
	_, _ = rand.Read(data)
	if err := os.WriteFile(base, data, 0o444); err != nil {
		b.Fatal(err)
	}
	img, err := elffile.OpenImage(k.Image())
	if err != nil {
		b.Fatal(err)
	}
	const cmd = "disk mode=read chunk=256"
	var live, rec time.Duration
	for i := 0; i < b.N; i++ {
		var out bytes.Buffer
		m, err := vmm.New(vmm.Config{Image: img, Cmdline: cmd, Console: &out,
			Disk: &vmm.DiskConfig{Base: base, Overlay: filepath.Join(dir, "live.overlay")}})
		if err != nil {
			b.Fatal(err)
		}
		rl, err := m.Run(context.Background())
		m.Close()
		if err != nil || rl.Status != 0 {
			b.Fatalf("live: %v\n%s", err, out.String())
		}
		rr, err := recorder.Record(context.Background(), recorder.Options{
			Image: img, Cmdline: cmd, Output: filepath.Join(dir, "disk.tape"), Console: io.Discard, DiskBase: base,
			Overwrite: true, // each iteration records to the same path
		})
		if err != nil || rr.Status != 0 {
			b.Fatalf("record: %v", err)
		}
		live += marked(rl)
		rec += marked(rr.Result)
	}
	mib := float64(len(data)>>20) * float64(b.N)
	b.ReportMetric(mib/live.Seconds(), "MiB/s-live")
	b.ReportMetric(mib/rec.Seconds(), "MiB/s-recorded")
	b.ReportMetric(float64(rec)/float64(live), "x-recorded")
}
