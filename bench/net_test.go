package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/recorder"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

// blast sends n datagrams of size bytes, keeping up to window unanswered,
// and returns the time from the first send to the last ACK.
func blast(b *testing.B, port, n, size, window int) time.Duration {
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	payload := bytes.Repeat([]byte{'r'}, size)
	ack := make([]byte, 256)
	start := time.Now()
	sent, acked := 0, 0
	for acked < n {
		for sent < n && sent-acked < window {
			if _, err := c.Write(payload); err != nil {
				b.Fatal(err)
			}
			sent++
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(ack); err != nil {
			b.Fatalf("ACK %d of %d: %v", acked, n, err)
		}
		acked++
	}
	return time.Since(start)
}

// BenchmarkUDPReceive: the udp workload receiving and acknowledging
// datagrams from a host sender, recorded and not recorded, side by side;
// and the tape it costs per MiB of network input.
func BenchmarkUDPReceive(b *testing.B) {
	k := kit(b)
	img, err := elffile.OpenImage(k.Image())
	if err != nil {
		b.Fatal(err)
	}
	const n, size, window = 2000, 1000, 32
	run := func(record bool) (time.Duration, int64) {
		port := kvmtest.FreeUDPPort(b)
		netCfg := &vmm.NetConfig{UDP: fmt.Sprintf("127.0.0.1:%d", port)}
		cmd := fmt.Sprintf("udp port=%d count=%d", port, n)
		console := kvmtest.NewConsole("truth: port=")
		done := make(chan error, 1)
		path := filepath.Join(b.TempDir(), "net.tape")
		go func() {
			if record {
				_, err := recorder.Record(context.Background(), recorder.Options{Image: img, Cmdline: cmd, Output: path, Console: console, Net: netCfg})
				done <- err
				return
			}
			m, err := vmm.New(vmm.Config{Image: img, Cmdline: cmd, Console: console, Net: netCfg})
			if err != nil {
				done <- err
				return
			}
			_, err = m.Run(context.Background())
			m.Close()
			done <- err
		}()
		<-console.Seen()
		d := blast(b, port, n, size, window)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		var tapeBytes int64
		if record {
			s, err := tape.Summarize(path)
			if err != nil {
				b.Fatal(err)
			}
			tapeBytes = s.EventBytes()
		}
		return d, tapeBytes
	}
	var live, rec time.Duration
	var tapeBytes int64
	for i := 0; i < b.N; i++ {
		l, _ := run(false)
		r, tb := run(true)
		live += l
		rec += r
		tapeBytes += tb
	}
	mib := float64(n*size*b.N) / (1 << 20)
	b.ReportMetric(mib/live.Seconds(), "MiB/s-live")
	b.ReportMetric(mib/rec.Seconds(), "MiB/s-recorded")
	b.ReportMetric(float64(rec)/float64(live), "x-recorded")
	b.ReportMetric(float64(tapeBytes)/mib/(1<<20), "tape-MiB-per-MiB-in")
}
