package tape

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sampleFacts is a fact of every op and form: answered and refused, a
// symbolic link, an empty listing, an empty file.
func sampleFacts() []*FileFact {
	return []*FileFact{
		{Op: FileStat, Path: "/usr/lib/x", Stat: Stat{Mode: sIFREG | 0o644, Nlink: 1, Size: 1234,
			Atime: 1700000000_123456789, Mtime: -5, Ctime: 1 << 62}},
		{Op: FileStat, Path: "/usr/lib/libc.so.6", Stat: Stat{Mode: sIFLNK | 0o777, UID: 1000, GID: 1 << 31, Nlink: 1, Size: 12, Link: "libc-2.39.so"}},
		{Op: FileStat, Path: "/nope", Errno: 2},
		{Op: FileList, Path: "/usr/lib", Entries: []DirEntry{
			{Name: "a.so", Stat: Stat{Mode: sIFREG | 0o755, Nlink: 1, Size: 99}},
			{Name: "dev", Stat: Stat{Mode: sIFCHR | 0o666, Nlink: 1}},
			{Name: "link", Stat: Stat{Mode: sIFLNK | 0o777, Nlink: 1, Size: 4, Link: "a.so"}},
			{Name: "sub", Stat: Stat{Mode: sIFDIR | 0o1777, Nlink: 2, Size: 4096, Mtime: -1}},
			{Name: "ünï", Stat: Stat{Mode: sIFIFO | 0o600, Nlink: 1}},
		}},
		{Op: FileList, Path: "/empty"},
		{Op: FileList, Path: "/root", Errno: 13},
		{Op: FileRead, Path: "/usr/bin/python3", Size: 6831736, SHA256: sha256.Sum256([]byte("python"))},
		{Op: FileRead, Path: "/empty-file", SHA256: sha256.Sum256(nil)},
		{Op: FileRead, Path: "/etc/shadow", Errno: 13},
		{Op: FileList, Path: "/srv", Entries: []DirEntry{
			{Name: "a", Stat: Stat{Mode: sIFREG | 0o644, Nlink: 1}},
			{Name: "b", Stat: Stat{Mode: sIFDIR | 0o755, Nlink: 2}},
			{Name: "c", Stat: Stat{Mode: sIFREG | 0o600, Nlink: 1}},
		}, Order: []uint32{2, 0, 1}},
	}
}

// sampleFactsOf are the sample facts a tape of version v can hold: no
// listing order before version 7.
func sampleFactsOf(v int) []*FileFact {
	var out []*FileFact
	for _, f := range sampleFacts() {
		if v >= 7 || len(f.Order) == 0 {
			out = append(out, f)
		}
	}
	return out
}

// factEvents is genEvents(1, 12, true) with a file event of each sample
// fact before the end, some at branches and with RIP and RCX.
func factEvents() []*Event { return factEventsOf(FormatVersion) }

// factEventsOf is factEvents as a tape of version v holds them.
func factEventsOf(v int) []*Event {
	evs := genEvents(1, 12, true)
	end := evs[len(evs)-1]
	evs = evs[:len(evs)-1]
	last := evs[len(evs)-1]
	for i, f := range sampleFactsOf(v) {
		e := &Event{Kind: KindFile, Pos: Position{Exit: last.Pos.Exit + uint64(i), Branch: last.Pos.Branch + uint64(i)*1000},
			HostTime: last.HostTime + time.Duration(i)*time.Microsecond, ExitReason: 2, Digest: uint64(i) * 0x9e3779b97f4a7c15, Fact: f}
		if i%3 == 1 {
			e.Pos.RIP, e.Pos.RCX = 0x401000+uint64(i), 3
		}
		evs = append(evs, e)
	}
	return append(evs, end)
}

// factHeader is a version 7 Linux program's header with every field of
// its own set: root, mounts, stdin, packed files, user and groups.
func factHeader() *Header {
	h := linuxHeader()
	lib := []byte("\x7fELF a library\n")
	h.Linux.Root = "/srv/roots/debian"
	h.Linux.Mounts = []Mount{{Guest: "/data", Host: "/home/u/data"}, {Guest: "/etc/app.conf", Host: "/home/u/app.conf"}}
	h.Linux.Stdin = "/data/in.txt"
	h.Linux.Personality = 7
	h.Linux.UID, h.Linux.GID, h.Linux.Groups = 1001, 1002, []uint32{27, 108}
	h.Linux.Files = []File{
		{Host: "/srv/roots/debian/usr/lib/a.so", Size: int64(len(lib)), SHA256: sha256.Sum256(lib), Data: lib},
		{Host: "/srv/roots/debian/empty-file", SHA256: sha256.Sum256(nil), Data: []byte{}},
	}
	return h
}

// Facts of every op and form, a listing of 5000 entries and one near
// MaxFactBytes among other events, come back from the tape as appended;
// encodedLen is the encoding's size.
func TestFileFactRoundTrip(t *testing.T) {
	var big []DirEntry
	for i := range 5000 {
		e := DirEntry{Name: fmt.Sprintf("f%05d.so", i), Stat: Stat{Mode: sIFREG | 0o644, Nlink: 1, Size: int64(i) * 4099, Mtime: int64(i) << 40}}
		switch {
		case i%7 == 0:
			e.Stat = Stat{Mode: sIFLNK | 0o777, Nlink: 1, Size: 9, Link: fmt.Sprintf("../t%d", i)}
		case i%11 == 0:
			e.Stat = Stat{Mode: sIFDIR | 0o755, Nlink: 3, Size: 4096}
		}
		big = append(big, e)
	}
	pad := strings.Repeat("x", MaxNameBytes-5)
	var huge []DirEntry
	for i := range 31000 {
		huge = append(huge, DirEntry{Name: fmt.Sprintf("%05d", i) + pad, Stat: Stat{Mode: sIFREG}})
	}
	facts := append(sampleFacts(), &FileFact{Op: FileList, Path: "/usr/lib/big", Entries: big},
		&FileFact{Op: FileList, Path: "/huge", Entries: huge})
	for _, f := range facts {
		require.Empty(t, f.check(), f.String())
		require.Equal(t, len(appendFact(nil, f)), f.encodedLen(), f.String())
	}
	require.Greater(t, facts[len(facts)-1].encodedLen(), MaxFactBytes-MaxFactBytes/64, "the huge listing is near the bound")

	var in []*Event
	for i, f := range facts {
		in = append(in, genEvents(uint64(i), 3, false)...) // pending before it
		in = append(in, &Event{Kind: KindFile, Pos: Position{Exit: uint64(i)}, Port: uint16(i), Fact: f})
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, linuxHeader())
	require.NoError(t, err)
	for _, e := range in {
		require.NoError(t, w.Append(e))
	}
	require.NoError(t, w.Close())
	r, err := NewReader(&buf)
	require.NoError(t, err)
	got, _, err := drain(r)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, in, got)
}

// Append refuses a fact breaking any rule, naming it; the reader refuses
// the same fact forged into a tape, or cannot be given it at all (its
// encoding has no room for the field).
func TestFileFactRules(t *testing.T) {
	sum := sha256.Sum256([]byte("x"))
	reg := Stat{Mode: sIFREG | 0o644, Nlink: 1}
	list := func(names ...string) []DirEntry {
		var es []DirEntry
		for _, n := range names {
			es = append(es, DirEntry{Name: n, Stat: reg})
		}
		return es
	}
	many := make([]DirEntry, MaxDirEntries+1)
	for i := range many {
		many[i] = DirEntry{Name: fmt.Sprintf("%06d", i), Stat: reg}
	}
	var tooBig []DirEntry
	for i := range 33000 {
		tooBig = append(tooBig, DirEntry{Name: fmt.Sprintf("%05d", i) + strings.Repeat("y", 250), Stat: reg})
	}
	for _, tc := range []struct {
		name string
		f    FileFact
		want string
	}{
		{"op 0", FileFact{Path: "/a"}, "unknown file op 0"},
		{"op 4", FileFact{Op: 4, Path: "/a"}, "unknown file op 4"},
		{"empty path", FileFact{Op: FileStat, Stat: reg}, "stat: a path of 0 bytes (want 1 to 4096)"},
		{"relative path", FileFact{Op: FileStat, Path: "a/b", Stat: reg}, `stat: path "a/b" is not absolute`},
		{"NUL in path", FileFact{Op: FileRead, Path: "/a\x00b", Size: 1, SHA256: sum}, "has a NUL byte"},
		{"long path", FileFact{Op: FileStat, Path: "/" + strings.Repeat("p", 4096), Stat: reg}, "a path of 4097 bytes"},
		{"errno 4096", FileFact{Op: FileStat, Path: "/a", Errno: 4096}, "errno 4096 (want 1 to 4095)"},
		{"errno with stat", FileFact{Op: FileStat, Path: "/a", Errno: 2, Stat: reg}, "errno 2 with an answer"},
		{"errno with entries", FileFact{Op: FileList, Path: "/a", Errno: 2, Entries: list("x")}, "errno 2 with an answer"},
		{"errno with size", FileFact{Op: FileRead, Path: "/a", Errno: 2, Size: 1}, "errno 2 with an answer"},
		{"errno with sha", FileFact{Op: FileRead, Path: "/a", Errno: 2, SHA256: sum}, "errno 2 with an answer"},
		{"list with stat", FileFact{Op: FileList, Path: "/a", Stat: reg}, `list "/a" with a Stat (only stat carries one)`},
		{"read with stat", FileFact{Op: FileRead, Path: "/a", Stat: reg, SHA256: sum}, `read "/a" with a Stat`},
		{"stat with entries", FileFact{Op: FileStat, Path: "/a", Stat: reg, Entries: list("x")}, `stat "/a" with Entries (only list carries them)`},
		{"read with entries", FileFact{Op: FileRead, Path: "/a", SHA256: sum, Entries: list("x")}, `read "/a" with Entries`},
		{"stat with size", FileFact{Op: FileStat, Path: "/a", Stat: reg, Size: 1}, `stat "/a" with a Size or SHA-256 (only read carries them)`},
		{"list with sha", FileFact{Op: FileList, Path: "/a", SHA256: sum}, `list "/a" with a Size or SHA-256`},
		{"no type", FileFact{Op: FileStat, Path: "/a", Stat: Stat{Mode: 0o644}}, `stat "/a": mode 0644 has no file type`},
		{"type 0o170000", FileFact{Op: FileStat, Path: "/a", Stat: Stat{Mode: 0o170644}}, "mode 0170644 has no file type"},
		{"bits past the mode", FileFact{Op: FileStat, Path: "/a", Stat: Stat{Mode: 1<<16 | sIFREG}}, "has bits past the type and permissions"},
		{"negative stat size", FileFact{Op: FileStat, Path: "/a", Stat: Stat{Mode: sIFREG, Size: -1}}, "size -1"},
		{"link without target", FileFact{Op: FileStat, Path: "/a", Stat: Stat{Mode: sIFLNK | 0o777}}, "a symbolic link without its target"},
		{"regular with target", FileFact{Op: FileStat, Path: "/a", Stat: Stat{Mode: sIFREG, Link: "b"}}, "a link target for mode 0100000, not a symbolic link"},
		{"long target", FileFact{Op: FileStat, Path: "/a", Stat: Stat{Mode: sIFLNK, Link: strings.Repeat("l", MaxLinkBytes+1)}}, "link target of 4096 bytes (at most 4095)"},
		{"NUL in target", FileFact{Op: FileStat, Path: "/a", Stat: Stat{Mode: sIFLNK, Link: "a\x00"}}, "link target with a NUL byte"},
		{"too many entries", FileFact{Op: FileList, Path: "/a", Entries: many}, "65537 entries (at most 65536)"},
		{"empty name", FileFact{Op: FileList, Path: "/a", Entries: list("a", "")}, "entry 1: a name of 0 bytes (want 1 to 255)"},
		{"long name", FileFact{Op: FileList, Path: "/a", Entries: list(strings.Repeat("n", 256))}, "entry 0: a name of 256 bytes"},
		{"dot", FileFact{Op: FileList, Path: "/a", Entries: list(".")}, `entry 0: the name "."`},
		{"dot dot", FileFact{Op: FileList, Path: "/a", Entries: list("..", "a")}, `entry 0: the name ".."`},
		{"slash", FileFact{Op: FileList, Path: "/a", Entries: list("a/b")}, `name "a/b" with a '/' or NUL`},
		{"NUL in name", FileFact{Op: FileList, Path: "/a", Entries: list("a\x00")}, "with a '/' or NUL"},
		{"unsorted", FileFact{Op: FileList, Path: "/a", Entries: list("a", "c", "b")}, `entry 2 "b" is not after "c"`},
		{"twice", FileFact{Op: FileList, Path: "/a", Entries: list("a", "b", "b")}, `entry 2 "b" is not after "b" (entries are sorted by name, none twice)`},
		{"order of fewer", FileFact{Op: FileList, Path: "/a", Entries: list("a", "b"), Order: []uint32{0}}, "an order of 1 entries for 2"},
		{"order twice", FileFact{Op: FileList, Path: "/a", Entries: list("a", "b"), Order: []uint32{1, 1}}, "entry 1 twice or out of 2 in the order"},
		{"order past the entries", FileFact{Op: FileList, Path: "/a", Entries: list("a", "b"), Order: []uint32{0, 2}}, "entry 2 twice or out of 2"},
		{"order of a stat", FileFact{Op: FileStat, Path: "/a", Stat: Stat{Mode: sIFREG}, Order: []uint32{0}}, `stat "/a" with Entries`},
		{"bad entry stat", FileFact{Op: FileList, Path: "/a", Entries: []DirEntry{{Name: "x", Stat: Stat{Mode: 0o644}}}}, `entry "x": mode 0644 has no file type`},
		{"negative read size", FileFact{Op: FileRead, Path: "/a", Size: -1, SHA256: sum}, `read "/a": size -1`},
		{"no sha", FileFact{Op: FileRead, Path: "/a", Size: 1}, `read "/a": no SHA-256`},
		{"too big", FileFact{Op: FileList, Path: "/a", Entries: tooBig}, "bytes encoded, more than the 8388608 a fact may take"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWriter(io.Discard, smallHeader())
			require.NoError(t, err)
			e := &Event{Kind: KindFile, Fact: &tc.f}
			err = w.Append(e)
			require.ErrorContains(t, err, "tape: append event 0: file event: ")
			require.ErrorContains(t, err, tc.want)
			require.Zero(t, w.Events())

			// Forged past Append: damage, or not representable.
			payload := appendEvent(nil, e, &deltas{})
			if len(payload) > maxPayloadBytes {
				return
			}
			_, got, err := readFile(t, writeFile(t, t.TempDir(), appendFrame(v5Head(t), tagChunk, 1, payload)))
			var ce *CorruptError
			if len(got) == 1 {
				require.NotEqual(t, e, got[0], "the reader returned the invalid fact")
				return
			}
			require.ErrorAs(t, err, &ce)
			require.Equal(t, 0, ce.Event)
			require.NotEmpty(t, ce.Reason)
		})
	}

	// The rules of the event around the fact.
	w, err := NewWriter(io.Discard, smallHeader())
	require.NoError(t, err)
	f := sampleFacts()[0]
	for _, tc := range []struct {
		e    *Event
		want string
	}{
		{&Event{Kind: KindFile}, "file event without Fact"},
		{&Event{Kind: KindTime, Value: 1, Fact: f}, "time event with a Fact (only file carries one)"},
		{&Event{Kind: KindFile, Fact: f, Data: []byte{1}}, "file event with Data"},
		{&Event{Kind: KindFile, Fact: f, Value: 1}, "file event with a Value"},
		{&Event{Kind: KindFile, Fact: f, Vector: 1}, "file event with a Vector"},
		{&Event{Kind: KindFile, Fact: f, End: &End{Reason: EndExited}}, "file event with an End"},
	} {
		require.ErrorContains(t, w.Append(tc.e), tc.want)
	}
	require.NoError(t, w.Append(&Event{Kind: KindFile, Fact: f}))
}

// v5Head is the file header of a version 5 tape: its chunks follow.
func v5Head(t testing.TB) []byte {
	data, _, bounds := smallTape(t, 1)
	return bytes.Clone(data[:bounds[0]])
}

// factPayload is a file event with zero common fields, then fact, the
// fact's bytes as given.
func factPayload(fact ...[]byte) []byte {
	b := append([]byte{byte(KindFile), 0, 0, 0, 0, 0}, make([]byte, 8)...)
	for _, p := range fact {
		b = append(b, p...)
	}
	return b
}

func uv(x uint64) []byte { return binary.AppendUvarint(nil, x) }

// Forged lengths in a fact cost nothing: each is checked against its
// bound and the bytes left before anything is allocated for it.
func TestFileFactForgedLengths(t *testing.T) {
	head := v5Head(t)
	pathD := append(uv(2), "/d"...)
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"2^40 entries", factPayload([]byte{byte(FileList)}, pathD, uv(0), uv(1<<40), make([]byte, 64)), "1099511627776 directory entries (at most 65536)"},
		{"entries past the payload", factPayload([]byte{byte(FileList)}, pathD, uv(0), uv(60000), make([]byte, 640)), "60000 directory entries cannot fit the 640 bytes left for them"},
		{"path past the payload", factPayload([]byte{byte(FileStat)}, uv(4000), []byte("/abc")), "file path runs past the end of the chunk"},
		{"2^40 path", factPayload([]byte{byte(FileStat)}, uv(1<<40), []byte("/abc")), "file path of 1099511627776 bytes (at most 4096)"},
		{"long name", factPayload([]byte{byte(FileList)}, pathD, uv(0), uv(1), uv(300), make([]byte, 400)), "entry name of 300 bytes (at most 255)"},
		{"link past the payload", factPayload([]byte{byte(FileStat)}, pathD, uv(0), uv(sIFLNK), make([]byte, 7), uv(4000), []byte("tgt")), "link target runs past the end of the chunk"},
		{"mode past 32 bits", factPayload([]byte{byte(FileStat)}, pathD, uv(0), uv(1<<40), make([]byte, 9)), "mode 1099511627776 does not fit 32 bits"},
		{"size past 63 bits", factPayload([]byte{byte(FileRead)}, pathD, uv(0), uv(1<<63), make([]byte, 32)), "file size 9223372036854775808 does not fit 63 bits"},
		{"errno 5000", factPayload([]byte{byte(FileStat)}, pathD, uv(5000)), "errno 5000 (at most 4095)"},
		{"op 9", factPayload([]byte{9}, pathD, uv(0), make([]byte, 40)), "unknown file op 9"},
		{"short sha", factPayload([]byte{byte(FileRead)}, pathD, uv(0), uv(3), make([]byte, 31)), "file sha256 runs past the end of the chunk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := appendFrame(bytes.Clone(head), tagChunk, 1, tc.payload)
			before := heapAllocs()
			r, err := NewReader(bytes.NewReader(b))
			require.NoError(t, err)
			_, err = r.Next()
			used := heapAllocs() - before
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, &CorruptError{Offset: int64(len(head)) + frameSize, Chunk: 0, Event: 0, Reason: ce.Reason}, ce)
			require.Contains(t, ce.Reason, tc.want)
			require.Less(t, used, uint64(1<<20), "allocated %d bytes for a %d-byte tape", used, len(b))
		})
	}
}

// A tape older than a kind cannot hold it: no writer of its version wrote
// one. A file event in a version 4 tape, a frame in a version 1 tape are
// damage; in a version 5 tape both read.
func TestKindOlderThanTape(t *testing.T) {
	file := appendEvent(nil, &Event{Kind: KindFile, Fact: sampleFacts()[0]}, &deltas{})
	frame := appendEvent(nil, &Event{Kind: KindNetRX, Value: 1, Data: []byte{1}}, &deltas{})
	for _, tc := range []struct {
		golden  string
		payload []byte
		want    string
	}{
		{"v4.tape", file, "file event (kind 8) in a version 4 tape: the kind is since version 5"},
		{"v1.tape", frame, "net-rx event (kind 6) in a version 1 tape: the kind is since version 2"},
	} {
		r, err := Open(filepath.Join("testdata", tc.golden))
		require.NoError(t, err)
		data, err := os.ReadFile(filepath.Join("testdata", tc.golden))
		require.NoError(t, err)
		start := r.start
		r.Close()
		b := appendFrame(bytes.Clone(data[:start]), tagChunk, 1, tc.payload)
		_, evs, err := readFile(t, writeFile(t, t.TempDir(), b))
		require.Empty(t, evs)
		require.Equal(t, &CorruptError{Offset: start + frameSize, Chunk: 0, Event: 0, Reason: tc.want}, err)

		_, evs, err = readFile(t, writeFile(t, t.TempDir(), appendFrame(v5Head(t), tagChunk, 1, tc.payload)))
		require.ErrorIs(t, err, io.EOF)
		require.Len(t, evs, 1)
	}
}

func TestFileFactString(t *testing.T) {
	f := sampleFacts()
	for i, want := range []string{
		"stat /usr/lib/x: regular 0644 1234 bytes",
		"stat /usr/lib/libc.so.6: symlink 0777 12 bytes -> libc-2.39.so",
		"stat /nope: ENOENT",
		"list /usr/lib: 5 entries",
		"list /empty: 0 entries",
		"list /root: EACCES",
		"read /usr/bin/python3: 6831736 bytes sha256 " + hex6(f[6].SHA256) + "…",
		"read /empty-file: 0 bytes sha256 e3b0c44298fc…",
		"read /etc/shadow: EACCES",
	} {
		require.Equal(t, want, f[i].String())
	}
	require.Equal(t, "list /a: 1 entry", (&FileFact{Op: FileList, Path: "/a", Entries: make([]DirEntry, 1)}).String())
	require.Equal(t, "stat /a: errno 4000", (&FileFact{Op: FileStat, Path: "/a", Errno: 4000}).String())
	require.Equal(t, "op(9) /a", (&FileFact{Op: 9, Path: "/a"}).String())
	require.Equal(t, "file", KindFile.String())
	require.Equal(t, "read", FileRead.String())
	require.Equal(t, "op(0)", FileOp(0).String())
}
