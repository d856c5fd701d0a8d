package tape

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCutEverywhere cuts a small tape (header + 3 chunks) at every byte
// offset, as a recorder killed mid-write would.
func TestCutEverywhere(t *testing.T) {
	data, evs, bounds := smallTape(t, 4, 5, 3)
	require.Len(t, bounds, 4)
	headerEnd := bounds[0]
	h := smallHeader()
	imageStart := headerEnd - frameSize - int64(len(h.Image.Bytes))
	dir := t.TempDir()
	counts := []int{0, 4, 9, 12} // events before chunk k

	for c := int64(0); c <= int64(len(data)); c++ {
		path := writeFile(t, dir, data[:c])
		got, gotEvs, err := readFile(t, path)
		if c < headerEnd {
			require.Nil(t, got, "cut at %d", c)
			var te *TruncatedError
			require.ErrorAs(t, err, &te, "cut at %d", c)
			want := int64(0)
			switch {
			case c >= imageStart:
				want = imageStart
			case c >= prefixSize:
				want = prefixSize
			}
			require.Equal(t, &TruncatedError{Offset: want, Chunk: -1, Events: 0, block: te.block, detail: te.detail}, te, "cut at %d", c)
			continue
		}
		require.Equal(t, h, got, "cut at %d", c)
		k := 0
		for k+1 < len(bounds) && bounds[k+1] <= c {
			k++
		}
		requireEvents(t, evs[:counts[k]], gotEvs, "cut at %d (chunk %d)", c, k)
		if c == bounds[k] {
			require.ErrorIs(t, err, io.EOF, "cut at chunk boundary %d", c)
			continue
		}
		var te *TruncatedError
		require.ErrorAs(t, err, &te, "cut at %d", c)
		require.Equal(t, bounds[k], te.Offset, "cut at %d", c)
		require.Equal(t, k, te.Chunk, "cut at %d", c)
		require.Equal(t, uint64(counts[k]), te.Events, "cut at %d", c)
	}
}

// requireEvents compares event lists, nil and empty alike.
func requireEvents(t testing.TB, want, got []*Event, msg ...any) {
	t.Helper()
	if len(want) == 0 && len(got) == 0 {
		return
	}
	require.Equal(t, want, got, msg...)
}

// TestFlipEveryByte damages each byte of a small tape in turn: the reader
// must report it, never return different events or header silently.
func TestFlipEveryByte(t *testing.T) {
	data, evs, _ := smallTape(t, 4, 5, 3)
	h := smallHeader()
	dir := t.TempDir()
	var corrupt, truncated int
	for i := range data {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(data)
			b[i] ^= mask
			path := writeFile(t, dir, b)
			got, gotEvs, err := readFile(t, path)
			var ce *CorruptError
			var te *TruncatedError
			switch {
			case errors.As(err, &ce):
				corrupt++
				require.GreaterOrEqual(t, int64(i), ce.Offset, "flip at %d: the damage cannot be before its report", i)
			case errors.As(err, &te):
				truncated++
			default:
				t.Fatalf("flip %#02x at byte %d went unnoticed: err %v", mask, i, err)
			}
			if got != nil {
				require.Equal(t, h, got, "flip at %d changed the header silently", i)
			}
			require.LessOrEqual(t, len(gotEvs), len(evs))
			requireEvents(t, evs[:len(gotEvs)], gotEvs, "flip at %d changed events silently", i)
		}
	}
	t.Logf("%d bytes × 3 flips: %d corrupt, %d truncated", len(data), corrupt, truncated)
}

func TestNotATape(t *testing.T) {
	dir := t.TempDir()
	for _, b := range []string{"#!/bin/sh\n", "REPRISX", "\x7fELF\x02\x01\x01", "REPRISE\x01xxxxxxxx"} {
		_, _, err := readFile(t, writeFile(t, dir, []byte(b)))
		require.ErrorIs(t, err, ErrNotTape, "%q", b)
		var ce *CorruptError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, &CorruptError{Offset: 0, Chunk: -1, Event: -1, Reason: "not a reprise tape (bad magic)", cause: ErrNotTape}, ce)
		require.Equal(t, "tape: corrupt at byte 0 (header): not a reprise tape (bad magic)", err.Error())
		require.False(t, IsDamaged(err), "not a tape at all is not a damaged tape")
	}
}

func TestErrorMessages(t *testing.T) {
	require.Equal(t, "tape: corrupt at byte 1234 (chunk 3, event 17): crc mismatch",
		(&CorruptError{Offset: 1234, Chunk: 3, Event: 17, Reason: "crc mismatch"}).Error())
	require.Equal(t, "tape: corrupt at byte 1234 (chunk 3): chunk crc mismatch",
		(&CorruptError{Offset: 1234, Chunk: 3, Event: -1, Reason: "chunk crc mismatch"}).Error())

	data, _, bounds := smallTape(t, 4, 5, 3)
	_, _, err := readFile(t, writeFile(t, t.TempDir(), data[:bounds[2]+7]))
	require.EqualError(t, err, fmt.Sprintf("tape: truncated at byte %d: the file ends inside chunk 2 (7 of its 20 frame-header bytes present); the 9 events before it are intact", bounds[2]))
	_, _, err = readFile(t, writeFile(t, t.TempDir(), data[:bounds[2]+27]))
	require.EqualError(t, err, fmt.Sprintf("tape: truncated at byte %d: the file ends inside chunk 2 (27 of its %d bytes present); the 9 events before it are intact", bounds[2], bounds[3]-bounds[2]))
	_, _, err = readFile(t, writeFile(t, t.TempDir(), data[:prefixSize+3]))
	require.EqualError(t, err, "tape: truncated at byte 16: the file ends inside the header block (3 of its 20 frame-header bytes present)")
	_, _, err = readFile(t, writeFile(t, t.TempDir(), data[:5]))
	require.EqualError(t, err, "tape: truncated at byte 0: the file ends inside the file prefix (5 of its 16 bytes present)")
}

func TestNewerVersion(t *testing.T) {
	data, _, _ := smallTape(t, 1)
	b := bytes.Clone(data)
	binary.LittleEndian.PutUint32(b[8:], FormatVersion+1)
	binary.LittleEndian.PutUint32(b[12:], crc(b[:12]))
	_, _, err := readFile(t, writeFile(t, t.TempDir(), b))
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, int64(8), ce.Offset)
	require.Contains(t, ce.Reason, fmt.Sprintf("format version %d is newer than this reader's (%d)", FormatVersion+1, FormatVersion))
}

// TestUnknownKind writes a chunk with a valid crc holding a kind from the
// future: the reader names it.
func TestUnknownKind(t *testing.T) {
	data, _, bounds := smallTape(t, 2)
	b := bytes.Clone(data[:bounds[0]])
	payload := appendEvent(nil, &Event{Kind: KindTime, Value: 5}, &deltas{})
	payload[0] = 9
	b = appendFrame(b, tagChunk, 1, payload)
	_, evs, err := readFile(t, writeFile(t, t.TempDir(), b))
	require.Empty(t, evs)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, &CorruptError{Offset: bounds[0] + frameSize, Chunk: 0, Event: 0, Reason: "unknown event kind 9"}, ce)
}

// TestBadPayloads feeds chunks with valid checksums but bad contents.
func TestBadPayloads(t *testing.T) {
	data, _, bounds := smallTape(t, 2)
	head := data[:bounds[0]]
	good := appendEvent(nil, &Event{Kind: KindTime, Value: 5}, &deltas{})
	end := appendEvent(nil, &Event{Kind: KindEnd, End: &End{Reason: EndExited}}, &deltas{})
	for _, tc := range []struct {
		name    string
		count   uint32
		payload []byte
		want    string
	}{
		{"trailing bytes", 1, append(bytes.Clone(good), 0), "1 bytes left after the chunk's 1 events"},
		{"short", 2, append(bytes.Clone(good), good[:14]...), "bad varint in value"},
		{"data past end", 1, func() []byte {
			p := appendEvent(nil, &Event{Kind: KindEntropy, Data: make([]byte, 60)}, &deltas{})
			return p[:len(p)-50]
		}(), "data runs past the end of the chunk"},
		{"reserved flags", 1, func() []byte { p := bytes.Clone(good); p[1] |= 0x40; return p }(), "reserved flag bits"},
		{"where 3", 1, func() []byte { p := bytes.Clone(good); p[1] |= 3; return p }(), "invalid placement"},
		{"after end", 2, append(bytes.Clone(end), good...), "an event after the end event"},
		{"count too big", 1000, good, "1000 events cannot fit"},
		{"zero count", 0, good, "0 events cannot fit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := appendFrame(bytes.Clone(head), tagChunk, tc.count, tc.payload)
			_, _, err := readFile(t, writeFile(t, t.TempDir(), b))
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			require.Contains(t, ce.Reason, tc.want)
		})
	}
	// A chunk after the end event.
	b := appendFrame(bytes.Clone(head), tagChunk, 1, end)
	b = appendFrame(b, tagChunk, 1, good)
	_, evs, err := readFile(t, writeFile(t, t.TempDir(), b))
	require.Len(t, evs, 1)
	require.ErrorContains(t, err, "a chunk after the end event")
}

func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestHugeLengths: lengths at the limits with valid checksums but no data
// behind them must cost no memory to speak of.
func TestHugeLengths(t *testing.T) {
	frameOnly := func(b []byte, tag [4]byte, count, length uint32) []byte {
		hdr := make([]byte, frameSize)
		copy(hdr, tag[:])
		binary.LittleEndian.PutUint32(hdr[4:], length)
		binary.LittleEndian.PutUint32(hdr[8:], count)
		binary.LittleEndian.PutUint32(hdr[16:], crc(hdr[:16]))
		return append(append(b, hdr...), make([]byte, 100)...)
	}
	prefix := appendPrefix(nil, FormatVersion)
	hj, err := json.Marshal(headerJSON{Source: "swbc", CPUID: []cpuidJSON{{}}, Image: imageJSON{SHA256: string(bytes.Repeat([]byte("ab"), 32)), Size: maxImageBytes}})
	require.NoError(t, err)
	withHeader := appendFrame(bytes.Clone(prefix), tagHeader, 0, hj)
	data, _, bounds := smallTape(t, 1)

	for name, b := range map[string][]byte{
		"header": frameOnly(bytes.Clone(prefix), tagHeader, 0, maxHeaderBytes),
		"image":  frameOnly(withHeader, tagImage, 0, maxImageBytes),
		"chunk":  frameOnly(bytes.Clone(data[:bounds[0]]), tagChunk, 1, maxPayloadBytes),
	} {
		t.Run(name, func(t *testing.T) {
			before := heapAllocs()
			r, err := NewReader(bytes.NewReader(b))
			if err == nil {
				_, err = r.Next()
			}
			used := heapAllocs() - before
			var te *TruncatedError
			require.ErrorAs(t, err, &te)
			require.Less(t, used, uint64(1<<20), "allocated %d bytes for a %d-byte tape", used, len(b))
		})
	}
	// Beyond the limits: corrupt, before reading anything.
	for name, b := range map[string][]byte{
		"header": frameOnly(bytes.Clone(prefix), tagHeader, 0, maxHeaderBytes+1),
		"chunk":  frameOnly(bytes.Clone(data[:bounds[0]]), tagChunk, 1, maxPayloadBytes+1),
	} {
		r, err := NewReader(bytes.NewReader(b))
		if err == nil {
			_, err = r.Next()
		}
		var ce *CorruptError
		require.ErrorAs(t, err, &ce, name)
		require.Contains(t, ce.Reason, "bytes", name)
	}
}

// TestDamagedHostFrame: a host frame is checked like a chunk, and a damaged
// one stops the reading with its offset, after the events before it.
func TestDamagedHostFrame(t *testing.T) {
	data, evs, _ := hostTape(t)
	at := bytes.LastIndex(data, []byte("pending chunk")) // the host frame before the last chunk
	require.Positive(t, at)
	data[at] ^= 0x20
	_, got, err := readFile(t, writeFile(t, t.TempDir(), data))
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "host crc mismatch", ce.Reason)
	require.Equal(t, int64(at-frameSize), ce.Offset)
	require.Equal(t, evs[:9], got, "the events of the chunks before the damage")

	var w Writer
	require.ErrorContains(t, w.AppendHost(0, []byte("x")), "at least one record")
}

// forgeHeader writes a tape whose header block is the given JSON, with
// valid checksums and an empty image: what a hostile tape can say.
func forgeHeader(t *testing.T, edit func(j *headerJSON)) []byte {
	return forgeHeaderAt(t, FormatVersion, edit)
}

// forgeHeaderAt is forgeHeader for a tape of format version.
func forgeHeaderAt(t *testing.T, version uint32, edit func(j *headerJSON)) []byte {
	h := smallHeader()
	j := headerJSON{
		Source: string(h.PositionSource), MemBytes: h.MemBytes, TimerHz: h.TimerHz, Cmdline: h.Cmdline,
		Image: imageJSON{SHA256: strings.Repeat("00", 32)},
	}
	for _, c := range h.CPUID {
		j.CPUID = append(j.CPUID, cpuidJSON(c))
	}
	edit(&j)
	body, err := json.Marshal(&j)
	require.NoError(t, err)
	b := appendFrame(appendPrefix(nil, version), tagHeader, 0, body)
	return appendFrame(b, tagImage, 0, nil)
}

// TestForgedHeaderFields: a header that passes every checksum but holds a
// field no machine can be built from is reported as damage at the header,
// by the reader and before the writer writes anything. An empty CPUID
// table once reached the replayer and panicked it.
func TestForgedHeaderFields(t *testing.T) {
	ok := forgeHeader(t, func(*headerJSON) {})
	_, err := NewReader(bytes.NewReader(ok))
	require.NoError(t, err, "the unforged header reads")

	for name, tc := range map[string]struct {
		edit func(j *headerJSON)
		why  string
	}{
		"no cpuid":       {func(j *headerJSON) { j.CPUID = nil }, "empty CPUID table"},
		"empty cpuid":    {func(j *headerJSON) { j.CPUID = []cpuidJSON{} }, "empty CPUID table"},
		"too much cpuid": {func(j *headerJSON) { j.CPUID = make([]cpuidJSON, MaxCPUIDEntries+1) }, "257 CPUID entries"},
		"2^42 bytes":     {func(j *headerJSON) { j.MemBytes = 1 << 42 }, "guest RAM of 4096 GiB is too large: the limit is 4 GiB"},
		"odd ram":        {func(j *headerJSON) { j.MemBytes = 64<<20 + 1 }, "not a multiple of 2 MiB"},
		"tiny ram":       {func(j *headerJSON) { j.MemBytes = 4096 }, "too small"},
		"fast timer":     {func(j *headerJSON) { j.TimerHz = 1 << 30 }, "too fast"},
		"long cmdline":   {func(j *headerJSON) { j.Cmdline = strings.Repeat("x", 256) }, "command line of 256 bytes"},
		"unknown source": {func(j *headerJSON) { j.Source = "magic" }, `unknown position source "magic"`},
		"relative disk":  {func(j *headerJSON) { j.Disk = &diskJSON{Path: "base.img", SHA256: strings.Repeat("00", 32)} }, `disk base image path "base.img" is not absolute`},
		"linux no argv": {func(j *headerJSON) {
			j.Linux = &linuxJSON{Path: "/bin/x", Random: strings.Repeat("00", 16)}
		}, "Linux program: no argv[0]"},
		"linux argv flood": {func(j *headerJSON) {
			j.Linux = &linuxJSON{Path: "/bin/x", Argv: make([]string, 5000), Random: strings.Repeat("00", 16)}
		}, "5000 arguments or variables"},
		"linux huge env": {func(j *headerJSON) {
			j.Linux = &linuxJSON{Path: "/bin/x", Argv: []string{"x"}, Env: []string{strings.Repeat("v", 200<<10)}, Random: strings.Repeat("00", 16)}
		}, "more than 131072"},
		"linux no path": {func(j *headerJSON) {
			j.Linux = &linuxJSON{Argv: []string{"x"}, Random: strings.Repeat("00", 16)}
		}, "Linux program path of 0 bytes"},
		"linux relative file": {func(j *headerJSON) {
			j.Linux = &linuxJSON{Path: "/bin/x", Argv: []string{"x"}, Random: strings.Repeat("00", 16), Root: "/",
				Files: []fileJSON{{Host: "x", SHA256: strings.Repeat("01", 32)}}}
		}, `Linux program file "x": path "x" is not absolute`},
		"linux random": {func(j *headerJSON) {
			j.Linux = &linuxJSON{Path: "/bin/x", Argv: []string{"x"}, Random: "zz"}
		}, "not 32 hex digits"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(forgeHeader(t, tc.edit)))
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, -1, ce.Chunk)
			require.Contains(t, ce.Reason, tc.why)
			require.True(t, IsDamaged(err))
		})
	}

	// The writer holds its own headers to the same rules.
	for name, h := range map[string]*Header{
		"no cpuid":   {PositionSource: SourceSWBC},
		"huge ram":   {PositionSource: SourceSWBC, CPUID: []CPUIDEntry{{}}, MemBytes: 1 << 42},
		"fast timer": {PositionSource: SourceSWBC, CPUID: []CPUIDEntry{{}}, TimerHz: 100_000_000},
	} {
		path := filepath.Join(t.TempDir(), "t.tape")
		_, err := Create(path, h)
		require.Error(t, err, name)
		require.NoFileExists(t, path, name)
	}
}
