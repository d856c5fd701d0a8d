package tape

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
)

// FuzzReader feeds arbitrary bytes through NewReader and Next: the reader
// must never panic, must end in io.EOF or a typed error, and must not
// allocate much more than the input's size.
func FuzzReader(f *testing.F) {
	data, _, bounds := smallTape(f, 4, 5, 3)
	f.Add(data)
	f.Add(data[:bounds[0]])
	f.Add(data[:bounds[1]+9])
	f.Add(data[:bounds[2]-1])
	f.Add(data[:30])
	for _, i := range []int{3, 10, 20, 100, int(bounds[0]) + 2, int(bounds[0]) + 25, int(bounds[2]) + 30} {
		b := bytes.Clone(data)
		b[i] ^= 0x40
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte("REPRISE\x00"))
	f.Add(packedTape(f)) // a Linux program's header and FILE frames
	facts, _, _ := hostTapeOf(f, factHeader(), factEvents())
	f.Add(facts) // file events of every op and form
	for _, op := range []FileOp{FileStat, FileList, FileRead} {
		// A fact whose lengths are damaged, with valid checksums.
		b := appendEvent(nil, &Event{Kind: KindFile, Fact: sampleFacts()[3*(op-1)/2]}, &deltas{})
		b[len(b)-3] ^= 0x81
		f.Add(appendFrame(v5Head(f), tagChunk, 1, b))
	}

	f.Fuzz(func(t *testing.T, b []byte) {
		before := heapAllocs()
		r, err := NewReader(bytes.NewReader(b))
		events := 0
		if err == nil {
			if r.Header() == nil {
				t.Fatal("no header and no error")
			}
			for {
				var e *Event
				e, err = r.Next()
				if err != nil {
					break
				}
				if why := e.check(); why != "" {
					t.Fatalf("the reader returned an event Append would refuse: %s", why)
				}
				events++
			}
		}
		used := heapAllocs() - before
		var ce *CorruptError
		var te *TruncatedError
		if err != io.EOF && !errors.As(err, &ce) && !errors.As(err, &te) {
			t.Fatalf("untyped error: %v", err)
		}
		if limit := 64*uint64(len(b)) + 2<<20; used > limit {
			t.Fatalf("allocated %d bytes reading %d bytes of input (%d events)", used, len(b), events)
		}
		if err == io.EOF {
			// An intact tape must re-encode to the same bytes' events.
			r2, _ := NewReader(bytes.NewReader(b))
			if h := r2.Header(); h.Linux != nil && h.Version < 5 {
				return // version 5 wants what version 4 did not say (root) and packs every file it lists
			}
			var buf bytes.Buffer
			w, werr := NewWriter(&buf, r2.Header())
			if werr != nil {
				t.Fatalf("a header the reader accepted is refused by the writer: %v", werr)
			}
			for {
				e, err := r2.Next()
				if err != nil {
					break
				}
				if err := w.Append(e); err != nil {
					t.Fatalf("an event the reader accepted is refused by the writer: %v", err)
				}
			}
		}
	})
}

// packedTape is a small tape of a Linux program with one packed file.
func packedTape(tb testing.TB) []byte {
	h := smallHeader()
	data := []byte("packed bytes\n")
	h.Linux = &Linux{Path: "/bin/x", Argv: []string{"x", "y"}, Env: []string{"A=b"}, Epoch: h.Created, Root: "/", Stdin: "/in", Personality: 3,
		Mounts: []Mount{{Guest: "/in", Host: "/host/in"}},
		Files:  []File{{Host: "/host/in", Size: int64(len(data)), SHA256: sha256.Sum256(data), Data: data}}}
	b, _, _ := hostTapeWith(tb, h)
	return b
}
