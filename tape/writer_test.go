package tape

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	h := fullHeader()
	evs := genEvents(7, 100_000, true)
	path := filepath.Join(t.TempDir(), "rt.tape")
	w, err := Create(path, h)
	require.NoError(t, err)
	for _, e := range evs {
		require.NoError(t, w.Append(e))
	}
	require.NoError(t, w.Close())
	require.Equal(t, uint64(len(evs)), w.Events())
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fi.Size(), w.Bytes())

	got, gotEvs, err := readFile(t, path)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, h, got)
	require.Equal(t, evs, gotEvs)

	s, err := Summarize(path)
	require.NoError(t, err)
	require.Greater(t, s.Chunks, 10, "100k events must span several chunks")
	t.Logf("%d events, %d bytes, %d chunks, %.1f bytes/event", len(evs), fi.Size(), s.Chunks,
		float64(fi.Size()-int64(len(h.Image.Bytes)))/float64(len(evs)))
}

func TestHeaderEdgeCases(t *testing.T) {
	dir := t.TempDir()
	for name, h := range map[string]*Header{
		"minimal":     {PositionSource: SourceExitSync, CPUID: []CPUIDEntry{{}}},
		"empty-lists": {PositionSource: SourcePMU, CPUID: []CPUIDEntry{{}}, Devices: map[string]string{}, Notes: []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			w, err := Create(path, h)
			require.NoError(t, err)
			require.NoError(t, w.Close())
			got, evs, err := readFile(t, path)
			require.ErrorIs(t, err, io.EOF)
			require.Empty(t, evs)
			want := *h
			want.Version = FormatVersion
			require.Equal(t, &want, got)
		})
	}

	// The writer fills in a missing image hash, and refuses a wrong one.
	h := fullHeader()
	sum := h.Image.SHA256
	h.Image.SHA256 = [32]byte{}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	r, err := NewReader(&buf)
	require.NoError(t, err)
	require.Equal(t, sum, r.Header().Image.SHA256)

	h.Image.SHA256[0] = 1
	_, err = NewWriter(io.Discard, h)
	require.ErrorContains(t, err, "does not match its bytes")

	h = fullHeader()
	h.PositionSource = "magic"
	path := filepath.Join(dir, "keep")
	require.NoError(t, os.WriteFile(path, []byte("precious"), 0o644))
	_, err = Create(path, h)
	require.ErrorContains(t, err, `tape: header: unknown position source "magic"`)
	b, _ := os.ReadFile(path)
	require.Equal(t, "precious", string(b), "an invalid header must not clobber the file")

	_, err = NewWriter(io.Discard, nil)
	require.Error(t, err)
}

func TestAppendValidation(t *testing.T) {
	ok := func() *Event { return &Event{Kind: KindInterrupt, Vector: 32} }
	for _, tc := range []struct {
		name string
		mod  func(e *Event)
		want string
	}{
		{"kind 0", func(e *Event) { e.Kind = 0; e.Vector = 0 }, "unknown event kind 0"},
		{"kind 9", func(e *Event) { e.Kind = 9; e.Vector = 0 }, "unknown event kind 9"},
		{"where", func(e *Event) { e.Where = 3 }, "invalid placement"},
		{"interrupt data", func(e *Event) { e.Data = make([]byte, 65) }, "interrupt event with 65 data bytes"},
		{"interrupt end", func(e *Event) { e.End = &End{Reason: EndExited} }, "interrupt event with an End"},
		{"port-in 0 bytes", func(e *Event) { *e = Event{Kind: KindPortIn} }, "port-in event with 0 data bytes"},
		{"port-in 3 bytes", func(e *Event) { *e = Event{Kind: KindPortIn, Data: make([]byte, 3)} }, "port-in event with 3 data bytes"},
		{"port-in vector", func(e *Event) { *e = Event{Kind: KindPortIn, Data: []byte{1}, Vector: 1} }, "port-in event with a Vector"},
		{"port-in value", func(e *Event) { *e = Event{Kind: KindPortIn, Data: []byte{1}, Value: 1} }, "port-in event with a Value"},
		{"entropy empty", func(e *Event) { *e = Event{Kind: KindEntropy} }, "entropy event with 0 data bytes"},
		{"entropy 65", func(e *Event) { *e = Event{Kind: KindEntropy, Data: make([]byte, 65)} }, "entropy event with 65 data bytes"},
		{"time data", func(e *Event) { *e = Event{Kind: KindTime, Data: []byte{1}} }, "time event with Data"},
		{"end without End", func(e *Event) { *e = Event{Kind: KindEnd} }, "end event without End"},
		{"end no reason", func(e *Event) { *e = Event{Kind: KindEnd, End: &End{}} }, "end reason of 0 bytes"},
		{"end long fault", func(e *Event) {
			*e = Event{Kind: KindEnd, End: &End{Reason: EndFault, Fault: string(make([]byte, maxFaultBytes+1))}}
		}, "fault report of 65537 bytes"},
		{"end value", func(e *Event) { *e = Event{Kind: KindEnd, Value: 1, End: &End{Reason: EndExited}} }, "end event with a Value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWriter(io.Discard, smallHeader())
			require.NoError(t, err)
			require.NoError(t, w.Append(ok()))
			e := ok()
			tc.mod(e)
			err = w.Append(e)
			require.ErrorContains(t, err, "tape: append event 1: "+tc.want)
			require.Equal(t, uint64(1), w.Events(), "a rejected event is not counted")
			require.NoError(t, w.Append(ok()), "a rejected event does not break the writer")
		})
	}

	w, err := NewWriter(io.Discard, smallHeader())
	require.NoError(t, err)
	require.Error(t, w.Append(nil))
	require.NoError(t, w.Append(&Event{Kind: KindEnd, End: &End{Reason: EndInterrupted}}))
	require.ErrorContains(t, w.Append(ok()), "already has its end event")
	require.NoError(t, w.Close())
	require.ErrorContains(t, w.Append(ok()), "closed")
	require.Error(t, w.Close())
}

// countingWriter counts Write calls and can fail after a number of bytes.
type countingWriter struct {
	bytes.Buffer
	writes int
	failAt int // fail a write that would go past this many bytes, if > 0
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	if c.failAt > 0 && c.Len()+len(p) > c.failAt {
		n := c.failAt - c.Len()
		c.Buffer.Write(p[:n])
		return n, errors.New("disk full")
	}
	return c.Buffer.Write(p)
}

func TestFlushWritesOneChunkInOneWrite(t *testing.T) {
	cw := &countingWriter{}
	w, err := NewWriter(cw, smallHeader())
	require.NoError(t, err)
	require.Equal(t, 1, cw.writes, "the header goes out in one write")
	require.Equal(t, int64(cw.Len()), w.Bytes())

	require.NoError(t, w.Flush())
	require.Equal(t, 1, cw.writes, "nothing pending: no write")

	evs := genEvents(3, 500, false)
	for _, e := range evs {
		require.NoError(t, w.Append(e))
	}
	require.Equal(t, 1, cw.writes, "500 events stay below ChunkBytes")
	require.NoError(t, w.Flush())
	require.Equal(t, 2, cw.writes)
	require.Equal(t, int64(cw.Len()), w.Bytes())
	require.NoError(t, w.Flush())
	require.Equal(t, 2, cw.writes)

	// Append writes a chunk by itself once ChunkBytes are pending, in one
	// write again, and every chunk is at least ChunkBytes long.
	before := w.Bytes()
	for _, e := range genEvents(4, 20_000, false) {
		require.NoError(t, w.Append(e))
	}
	chunks := cw.writes - 2
	require.Greater(t, chunks, 3)
	require.GreaterOrEqual(t, w.Bytes()-before, int64(chunks*(frameSize+ChunkBytes)))
	require.NoError(t, w.Close())
	require.Equal(t, int64(cw.Len()), w.Bytes())
	require.Equal(t, uint64(20_500), w.Events())
}

func TestWriteErrorSticks(t *testing.T) {
	cw := &countingWriter{failAt: 2000}
	w, err := NewWriter(cw, smallHeader())
	require.NoError(t, err)
	for _, e := range genEvents(5, 100, false) {
		require.NoError(t, w.Append(e))
	}
	err = w.Flush()
	require.ErrorContains(t, err, "disk full")
	require.ErrorContains(t, w.Append(genEvents(5, 1, false)[0]), "disk full")
	require.ErrorContains(t, w.Close(), "disk full")
	require.Equal(t, int64(2000), w.Bytes())

	// What reached the "disk" is a tape cut inside its first chunk.
	r, err := NewReader(bytes.NewReader(cw.Bytes()))
	require.NoError(t, err)
	_, err = r.Next()
	var te *TruncatedError
	require.ErrorAs(t, err, &te)
	require.Equal(t, 0, te.Chunk)
}

func TestCreateThenKill(t *testing.T) {
	// Create writes the header at once: a recorder killed right after it
	// leaves a valid, empty tape.
	path := filepath.Join(t.TempDir(), "k.tape")
	w, err := Create(path, fullHeader())
	require.NoError(t, err)
	require.NoError(t, w.Append(genEvents(1, 1, false)[0]))
	h, evs, err := readFile(t, path)
	require.ErrorIs(t, err, io.EOF)
	require.Empty(t, evs)
	require.Equal(t, fullHeader(), h)
	require.NoError(t, w.Close())
	_, evs, err = readFile(t, path)
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, evs, 1)
}

// A completion digest travels with its interrupt (the disk's).
func TestInterruptDataRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, &Header{PositionSource: SourceSWBC, CPUID: []CPUIDEntry{{}}})
	require.NoError(t, err)
	in := &Event{Kind: KindInterrupt, Vector: 0x22, Pos: Position{Exit: 7, Branch: 99}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	require.NoError(t, w.Append(in))
	require.NoError(t, w.Close())
	r, err := NewReader(&buf)
	require.NoError(t, err)
	out, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, in, out)
}

// Frames travel whole, with their host timestamps.
func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, &Header{PositionSource: SourceSWBC, CPUID: []CPUIDEntry{{}}})
	require.NoError(t, err)
	frame := bytes.Repeat([]byte{0xee}, 1514)
	in := []*Event{
		{Kind: KindInterrupt, Vector: 0x23, Pos: Position{Exit: 7, Branch: 99}, Where: AtBranch, Data: []byte{1, 2}},
		{Kind: KindNetRX, Pos: Position{Exit: 7, Branch: 99}, Where: AtBranch, Value: 123456, Data: frame},
		{Kind: KindNetTX, Pos: Position{Exit: 9, Branch: 120}, Value: 130000, Data: frame[:60]},
	}
	for _, e := range in {
		require.NoError(t, w.Append(e))
	}
	require.Error(t, w.Append(&Event{Kind: KindNetTX, Data: make([]byte, MaxFrame+1)}))
	require.Error(t, w.Append(&Event{Kind: KindNetRX}))
	require.NoError(t, w.Close())
	r, err := NewReader(&buf)
	require.NoError(t, err)
	for _, want := range in {
		got, err := r.Next()
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}
