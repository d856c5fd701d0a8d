package tape

import (
	"bytes"
	"io"
	"testing"
)

// benchEvents is a realistic mix: 70% interrupts (timer ones carrying the
// clock), 15% port reads, 12% time reads, 3% entropy, small deltas.
var benchEvents = genEvents(11, 1<<16, false)

func BenchmarkAppend(b *testing.B) {
	w, err := NewWriter(io.Discard, smallHeader())
	if err != nil {
		b.Fatal(err)
	}
	start := w.Bytes()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.Append(benchEvents[i&(len(benchEvents)-1)]); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(w.Bytes()-start)/float64(b.N), "bytes/event")
}

func BenchmarkRead(b *testing.B) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, smallHeader())
	if err != nil {
		b.Fatal(err)
	}
	start := w.Bytes()
	for _, e := range benchEvents {
		if err := w.Append(e); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.ReportAllocs()
	b.ResetTimer()
	var r *Reader
	for i := 0; i < b.N; i++ {
		if i%len(benchEvents) == 0 {
			if r, err = NewReader(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(len(data)-int(start))/float64(len(benchEvents)), "bytes/event")
}
