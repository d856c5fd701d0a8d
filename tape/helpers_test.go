package tape

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fullHeader returns a header with every field set, as a reader returns it.
func fullHeader() *Header {
	img := make([]byte, 3000)
	for i := range img {
		img[i] = byte(i * 7)
	}
	copy(img, "\x7fELF")
	return &Header{
		Version:        FormatVersion,
		Created:        time.Date(2025, 11, 21, 23, 27, 5, 123456789, time.UTC),
		PositionSource: SourceSWBC,
		MemBytes:       64 << 20,
		TimerHz:        250,
		Cmdline:        "syn_cont threads=16 \"quoted\" ünïcode",
		CPUID: []CPUIDEntry{
			{Function: 0, EAX: 0xd, EBX: 0x756e6547, ECX: 0x6c65746e, EDX: 0x49656e69},
			{Function: 1, EAX: 0x906ea, ECX: 0x80000000, EDX: 0x078bfbff},
			{Function: 7, Index: 0, Flags: 1, EBX: 0x1234},
			{Function: 0x80000001, ECX: 0x121, EDX: 0x2c100800},
		},
		Image:   Image{Name: "kernel.elf", SHA256: sha256.Sum256(img), Bytes: img},
		Devices: map[string]string{"serial": "16550@0x3f8", "timer": "pit@0x40", "entropy": "port@0x510"},
		Host:    "testhost 6.8.0-test",
		Reprise: "reprise v0.0.0-test",
		Notes:   []string{"no PMU: swbc positions", "rdtsc at CPL3 is not trapped"},
	}
}

// smallHeader is a header with a tiny image, for tests that walk every byte.
func smallHeader() *Header {
	h := fullHeader()
	h.Image.Bytes = []byte("\x7fELF tiny image")
	h.Image.SHA256 = sha256.Sum256(h.Image.Bytes)
	h.CPUID = h.CPUID[:1]
	return h
}

// linuxHeader is smallHeader for a Linux program, as version 7 records
// one: no files packed.
func linuxHeader() *Header {
	h := smallHeader()
	h.Linux = &Linux{Path: "/bin/x", Argv: []string{"x"}, Epoch: h.Created, Root: "/"}
	return h
}

// genEvents returns n events in a realistic mix: mostly timer and device
// interrupts with small position deltas, some port reads and time reads, a
// little entropy, and an end event last if end is set.
func genEvents(seed uint64, n int, end bool) []*Event {
	rng := rand.New(rand.NewPCG(seed, 42))
	var exit, branch uint64
	var host time.Duration
	evs := make([]*Event, 0, n)
	for i := 0; i < n; i++ {
		exit += uint64(rng.IntN(40))
		branch += uint64(rng.IntN(200000))
		host += time.Duration(rng.IntN(4_000_000))
		e := &Event{
			Pos:        Position{Exit: exit, Branch: branch},
			HostTime:   host,
			ExitReason: 2,
			Port:       0x3f8 + uint16(rng.IntN(8)),
			Digest:     rng.Uint64(),
		}
		switch r := rng.IntN(100); {
		case r < 70:
			e.Kind = KindInterrupt
			e.Where = Where(rng.IntN(3))
			e.Vector = 32 + uint8(rng.IntN(4))
			if e.Vector == 32 {
				e.Value = uint64(host) + 12345
			}
			if e.Where != AtExit {
				e.Port = 0
				e.ExitReason = 0
			}
			if rng.IntN(10) == 0 {
				e.Pos.RIP = 0x400000 + rng.Uint64N(1<<20)
				e.Pos.RCX = rng.Uint64N(1 << 12)
			}
		case r < 85:
			e.Kind = KindPortIn
			e.Data = make([]byte, []int{1, 2, 4}[rng.IntN(3)])
			for j := range e.Data {
				e.Data[j] = byte(rng.Uint32())
			}
		case r < 97:
			e.Kind = KindTime
			e.Port = 0x500
			e.Value = uint64(host) + uint64(rng.IntN(1000))
		default:
			e.Kind = KindEntropy
			e.Data = make([]byte, 1+rng.IntN(MaxEntropy))
			for j := range e.Data {
				e.Data[j] = byte(rng.Uint32())
			}
		}
		evs = append(evs, e)
	}
	if end {
		last := evs[len(evs)-1]
		evs[len(evs)-1] = &Event{
			Kind: KindEnd, Pos: last.Pos, HostTime: last.HostTime, ExitReason: 2, Port: 0x501, Digest: 7,
			End: &End{Reason: EndExited, Status: 3, RAMHash: sha256.Sum256([]byte("ram")),
				ConsoleHash: sha256.Sum256([]byte("console")), ConsoleBytes: 1234},
		}
	}
	return evs
}

// smallTape writes a small tape: header, then chunks holding the given
// numbers of events (the last one ending with the end event). It returns
// the bytes, the events, and the offset where each chunk starts plus the
// file length.
func smallTape(t testing.TB, sizes ...int) (data []byte, evs []*Event, bounds []int64) {
	total := 0
	for _, n := range sizes {
		total += n
	}
	evs = genEvents(1, total, true)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, smallHeader())
	require.NoError(t, err)
	bounds = []int64{w.Bytes()}
	i := 0
	for _, n := range sizes {
		for _, e := range evs[i : i+n] {
			require.NoError(t, w.Append(e))
		}
		i += n
		require.NoError(t, w.Flush())
		bounds = append(bounds, w.Bytes())
	}
	require.NoError(t, w.Close())
	return buf.Bytes(), evs, bounds
}

// hostTape is smallTape(t, 4, 5, 3) with host frames before, between
// and after the chunks; hosts lists them as "count:body".
func hostTape(t testing.TB) (data []byte, evs []*Event, hosts []string) {
	return hostTapeWith(t, smallHeader())
}

// hostTapeWith is hostTape with the header h.
func hostTapeWith(t testing.TB, h *Header) (data []byte, evs []*Event, hosts []string) {
	return hostTapeOf(t, h, genEvents(1, 12, true))
}

// hostTapeOf is hostTapeWith with the events evs (at least 9): chunks of
// 4, 5 and the rest.
func hostTapeOf(t testing.TB, h *Header, evs []*Event) (data []byte, _ []*Event, hosts []string) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	require.NoError(t, err)
	host := func(count uint32, body string) {
		require.NoError(t, w.AppendHost(count, []byte(body)))
		hosts = append(hosts, fmt.Sprintf("%d:%s", count, body))
	}
	host(1, "first")
	i := 0
	for _, n := range []int{4, 5, len(evs) - 9} {
		for _, e := range evs[i : i+n] {
			require.NoError(t, w.Append(e))
		}
		i += n
		host(uint32(n), "pending chunk not yet written")
		require.NoError(t, w.Flush())
	}
	host(2, "after the end")
	require.NoError(t, w.Close())
	return buf.Bytes(), evs, hosts
}

// readAll reads every event of the tape in data, written to a real file.
// It returns the header (nil if Open failed), the events read and the error
// that stopped the reading (io.EOF for an intact tape).
func readFile(t testing.TB, path string) (*Header, []*Event, error) {
	r, err := Open(path)
	if err != nil {
		require.Nil(t, r)
		return nil, nil, err
	}
	defer r.Close()
	var evs []*Event
	for {
		e, err := r.Next()
		if err != nil {
			e2, err2 := r.Next()
			require.Nil(t, e2)
			require.Equal(t, err, err2, "the error must stick")
			return r.Header(), evs, err
		}
		evs = append(evs, e)
	}
}

func writeFile(t testing.TB, dir string, data []byte) string {
	p := filepath.Join(dir, "t.tape")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}
