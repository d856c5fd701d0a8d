package tape

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A tape names its files by content: a file without a hash (all zeros
// once meant "not recorded", and a replay skipped the check) is refused
// by the writer and is damage to the reader.
func TestFileHashIsChecked(t *testing.T) {
	data := []byte("contents\n")
	h := linuxHeader()
	h.Linux.Files = []File{{Host: "/host/a", Size: int64(len(data)), SHA256: sha256.Sum256(data), Data: data}}
	_, err := NewWriter(&bytes.Buffer{}, h)
	require.NoError(t, err)
	h.Linux.Files[0].SHA256 = [32]byte{}
	_, err = NewWriter(&bytes.Buffer{}, h)
	require.ErrorContains(t, err, `file "/host/a" has no SHA-256 recorded`)

	forged := forgeHeader(t, func(j *headerJSON) {
		j.Linux = &linuxJSON{Path: "/bin/x", Argv: []string{"x"}, Random: strings.Repeat("00", 16), Root: "/",
			Files: []fileJSON{{Host: "/etc/shadow", Size: 1, SHA256: strings.Repeat("00", 32)}}}
	})
	_, err = NewReader(bytes.NewReader(forged))
	require.True(t, IsDamaged(err), "%v", err)
	require.ErrorContains(t, err, "has no SHA-256 recorded")
}

// A version 5 Linux program's header keeps its root, mounts, standard
// input and packed files, and answers for the packed contents by host
// path, size and hash.
func TestLinuxHeaderRoundTrip(t *testing.T) {
	h := factHeader()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	r, err := NewReader(&buf)
	require.NoError(t, err)
	require.Equal(t, h, r.Header())
	l := r.Header().Linux
	require.Equal(t, "/srv/roots/debian", l.Root)
	require.Equal(t, []Mount{{Guest: "/data", Host: "/home/u/data"}, {Guest: "/etc/app.conf", Host: "/home/u/app.conf"}}, l.Mounts)
	require.Equal(t, "/data/in.txt", l.Stdin)

	lib := h.Linux.Files[0]
	got, ok := l.Packed(lib.Host, lib.Size, lib.SHA256)
	require.True(t, ok)
	require.Equal(t, lib.Data, got)
	for _, miss := range []File{
		{Host: lib.Host, Size: lib.Size + 1, SHA256: lib.SHA256},
		{Host: lib.Host, Size: lib.Size, SHA256: sha256.Sum256(nil)},
		{Host: "/elsewhere", Size: lib.Size, SHA256: lib.SHA256},
	} {
		_, ok := l.Packed(miss.Host, miss.Size, miss.SHA256)
		require.False(t, ok, "%+v", miss)
	}
}

// A version 5 header's root, mounts, stdin and files are checked by the
// writer and the reader alike.
func TestLinuxHeaderRules(t *testing.T) {
	lib := []byte("lib")
	file := File{Host: "/lib.so", Size: 3, SHA256: sha256.Sum256(lib), Data: lib}
	var mounts []Mount
	for i := range MaxMounts + 1 {
		mounts = append(mounts, Mount{Guest: fmt.Sprintf("/m%d", i), Host: "/h"})
	}
	for _, tc := range []struct {
		name string
		edit func(l *Linux)
		want string
	}{
		{"no root", func(l *Linux) { l.Root = "" }, "root: a path of 0 bytes (want 1 to 4096)"},
		{"relative root", func(l *Linux) { l.Root = "srv/root" }, `root: path "srv/root" is not absolute`},
		{"long root", func(l *Linux) { l.Root = "/" + strings.Repeat("r", 4096) }, "root: a path of 4097 bytes"},
		{"relative mount guest", func(l *Linux) { l.Mounts = []Mount{{Guest: "data", Host: "/h"}} }, `mount of "/h" at "data": path "data" is not absolute`},
		{"relative mount host", func(l *Linux) { l.Mounts = []Mount{{Guest: "/data", Host: "h"}} }, `mount of "h" at "/data": path "h" is not absolute`},
		{"mount guest twice", func(l *Linux) {
			l.Mounts = []Mount{{Guest: "/a", Host: "/h"}, {Guest: "/b", Host: "/h"}, {Guest: "/a/", Host: "/i"}}
		}, `has two mounts at "/a"`},
		{"too many mounts", func(l *Linux) { l.Mounts = mounts }, "lists 257 mounts, more than 256"},
		{"too many groups", func(l *Linux) { l.Groups = make([]uint32, MaxGroups+1) }, "lists 65537 supplementary groups, more than 65536"},
		{"relative stdin", func(l *Linux) { l.Stdin = "in.txt" }, `standard input: path "in.txt" is not absolute`},
		{"relative file", func(l *Linux) { f := file; f.Host = "lib.so"; l.Files = []File{f} }, `file "lib.so": path "lib.so" is not absolute`},
		{"file twice", func(l *Linux) { l.Files = []File{file, file} }, `lists file "/lib.so" (3 bytes, sha256 ` + hex6(file.SHA256) + `…) twice`},
		{"negative size", func(l *Linux) { f := file; f.Size = -1; l.Files = []File{f} }, `file "/lib.so": size -1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := linuxHeader()
			tc.edit(h.Linux)
			_, err := NewWriter(&bytes.Buffer{}, h)
			require.ErrorContains(t, err, "tape: header: Linux program ")
			require.ErrorContains(t, err, tc.want)

			forged := forgeHeader(t, func(j *headerJSON) {
				l := h.Linux
				j.Linux = &linuxJSON{Path: l.Path, Argv: l.Argv, Random: strings.Repeat("00", 16), Root: l.Root, Stdin: l.Stdin,
					User: &userJSON{l.UID, l.GID, l.Groups}}
				for _, m := range l.Mounts {
					j.Linux.Mounts = append(j.Linux.Mounts, mountJSON(m))
				}
				for _, f := range l.Files {
					j.Linux.Files = append(j.Linux.Files, fileJSON{Host: f.Host, Size: f.Size, SHA256: fmt.Sprintf("%x", f.SHA256)})
				}
			})
			_, err = NewReader(bytes.NewReader(forged))
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, -1, ce.Chunk)
			require.Contains(t, ce.Reason, "Linux program "+tc.want)
		})
	}

	// Mounts of one host path at two guest paths, files of one content
	// at two host paths, and a file of one host path with two contents
	// (it changed while the program ran) are all fine.
	h := linuxHeader()
	other := []byte("new")
	h.Linux.Mounts = []Mount{{Guest: "/a", Host: "/h"}, {Guest: "/b", Host: "/h"}}
	h.Linux.Files = []File{file, {Host: "/copy.so", Size: 3, SHA256: file.SHA256, Data: lib},
		{Host: "/lib.so", Size: 3, SHA256: sha256.Sum256(other), Data: other}}
	_, err := NewWriter(&bytes.Buffer{}, h)
	require.NoError(t, err)
}

// v4Tape forges a version 4 Linux program's tape: its header lists files
// as version 4 did, and the packed ones' FILE frames follow the image.
func v4Tape(t *testing.T, files []fileJSON, stdin string, packed ...[]byte) []byte {
	b := forgeHeaderAt(t, 4, func(j *headerJSON) {
		j.Linux = &linuxJSON{Path: "/bin/x", Argv: []string{"x"}, Random: strings.Repeat("00", 16), Files: files, Stdin: stdin}
	})
	for i, data := range packed {
		if data != nil {
			b = appendFrame(b, tagFile, uint32(i), data)
		}
	}
	return b
}

// A version 4 header's files still read, by version 4's rules: guest
// paths and modes are checked, then dropped; packed ones keep their
// contents.
func TestV4Files(t *testing.T) {
	one, two := []byte("packed\n"), []byte("not packed\n")
	hex := func(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b)) }
	files := []fileJSON{
		{Guest: "/in", Host: "/host/in", Size: int64(len(one)), SHA256: hex(one), Mode: 0o644, Packed: true},
		{Guest: "/lib", Host: "/host/lib", Size: int64(len(two)), SHA256: hex(two), Mode: 0o755},
		{Guest: "/again", Host: "/host/in", Size: int64(len(one)), SHA256: hex(one), Mode: 0o644},
	}
	r, err := NewReader(bytes.NewReader(v4Tape(t, files, "/in", one)))
	require.NoError(t, err)
	h := r.Header()
	require.Equal(t, 4, h.Version)
	require.Equal(t, []File{
		{Host: "/host/in", Size: int64(len(one)), SHA256: sha256.Sum256(one), Data: one},
		{Host: "/host/lib", Size: int64(len(two)), SHA256: sha256.Sum256(two)},
		{Host: "/host/in", Size: int64(len(one)), SHA256: sha256.Sum256(one)},
	}, h.Linux.Files)
	require.Empty(t, h.Linux.Root)
	require.Equal(t, "/in", h.Linux.Stdin)
	got, ok := h.Linux.Packed("/host/in", int64(len(one)), sha256.Sum256(one))
	require.True(t, ok)
	require.Equal(t, one, got)
	_, ok = h.Linux.Packed("/host/lib", int64(len(two)), sha256.Sum256(two))
	require.False(t, ok, "not packed")

	for _, tc := range []struct {
		name  string
		edit  func(f []fileJSON) string
		want  string
		stdin string
	}{
		{"stdin not a file", func([]fileJSON) string { return "/elsewhere" }, `standard input "/elsewhere" is not one of its files`, ""},
		{"mode", func(f []fileJSON) string { f[1].Mode = 0o4755; return "/in" }, "mode 04755 is not permission bits", ""},
		{"relative guest", func(f []fileJSON) string { f[1].Guest = "lib"; return "/in" }, `file "lib" (host "/host/lib"): paths must be absolute`, ""},
		{"relative host", func(f []fileJSON) string { f[1].Host = "lib"; return "/in" }, `file "lib": path "lib" is not absolute`, ""},
	} {
		fs := append([]fileJSON(nil), files...)
		stdin := tc.edit(fs)
		_, err := NewReader(bytes.NewReader(v4Tape(t, fs, stdin, one)))
		require.True(t, IsDamaged(err), "%s: %v", tc.name, err)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}

// tapeOpener returns an open function for Pack reading data, and counts
// its calls.
func tapeOpener(data ...[]byte) (func() (*Reader, error), *int) {
	n := new(int)
	return func() (*Reader, error) {
		d := data[min(*n, len(data)-1)]
		*n++
		return NewReader(bytes.NewReader(d))
	}, n
}

// readFact is a file event: the run read host, whose contents are data.
func readFact(exit uint64, host string, data []byte) *Event {
	return &Event{Kind: KindFile, Pos: Position{Exit: exit}, Fact: &FileFact{Op: FileRead, Path: host, Size: int64(len(data)), SHA256: sha256.Sum256(data)}}
}

// Pack packs exactly the files the run read, once each, in the order
// first read: a path read twice is one file, a content at two paths two
// files read once; a failed read, a stat and a listing name none. It
// opens the tape twice and keeps the events and host frames.
func TestPack(t *testing.T) {
	dir := t.TempDir()
	lib, data := []byte("\x7fELF a library\n"), []byte("some data\n")
	libPath, dataPath, copyPath := filepath.Join(dir, "lib.so"), filepath.Join(dir, "data"), filepath.Join(dir, "copy.so")
	for p, b := range map[string][]byte{libPath: lib, dataPath: data, copyPath: lib} {
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	var opened []string
	openHost := func(f *File) (io.ReadCloser, fs.FileInfo, error) {
		opened = append(opened, f.Host)
		file, err := os.Open(f.Host)
		if err != nil {
			return nil, nil, err
		}
		st, err := file.Stat()
		return file, st, err
	}
	evs := genEvents(1, 12, true)
	end := evs[11]
	evs = append(evs[:11],
		readFact(200, libPath, lib),
		&Event{Kind: KindFile, Pos: Position{Exit: 201}, Fact: &FileFact{Op: FileStat, Path: dataPath, Stat: Stat{Mode: sIFREG | 0o644, Size: 10}}},
		readFact(202, dataPath, data),
		readFact(203, libPath, lib),
		&Event{Kind: KindFile, Pos: Position{Exit: 204}, Fact: &FileFact{Op: FileRead, Path: "/etc/shadow", Errno: 13}},
		&Event{Kind: KindFile, Pos: Position{Exit: 205}, Fact: &FileFact{Op: FileList, Path: dir}},
		readFact(206, copyPath, lib),
		end)
	tape, _, hosts := hostTapeOf(t, linuxHeader(), evs)

	open, opens := tapeOpener(tape)
	var out bytes.Buffer
	require.NoError(t, Pack(open, &out, openHost))
	require.Equal(t, 2, *opens, "two passes")
	require.Equal(t, []string{libPath, dataPath}, opened, "each content read once")
	r, err := NewReader(bytes.NewReader(out.Bytes()))
	require.NoError(t, err)
	l := r.Header().Linux
	require.Equal(t, []File{
		{Host: libPath, Size: int64(len(lib)), SHA256: sha256.Sum256(lib), Data: lib},
		{Host: dataPath, Size: int64(len(data)), SHA256: sha256.Sum256(data), Data: data},
		{Host: copyPath, Size: int64(len(lib)), SHA256: sha256.Sum256(lib), Data: lib},
	}, l.Files)
	got, ok := l.Packed(dataPath, int64(len(data)), sha256.Sum256(data))
	require.True(t, ok)
	require.Equal(t, data, got)
	gotEvs, gotHosts, err := drain(r)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, evs, gotEvs)
	require.Equal(t, hosts, gotHosts)

	// Packing a packed tape keeps its files and reads none.
	opened = nil
	open, _ = tapeOpener(out.Bytes())
	var again bytes.Buffer
	require.NoError(t, Pack(open, &again, openHost))
	require.Empty(t, opened)
	require.Equal(t, out.Bytes(), again.Bytes())

	// A tape of an older format is not rewritten in this one, where its
	// RAM hash would mean something else.
	old, err := os.ReadFile(filepath.Join("testdata", "v8.tape"))
	require.NoError(t, err)
	open, _ = tapeOpener(old)
	require.ErrorContains(t, Pack(open, &bytes.Buffer{}, openHost), "tape: packing a format version 8 tape: packing writes version 9")

	// A host file that changed is refused by name: its contents, then its size.
	require.NoError(t, os.WriteFile(dataPath, []byte("SOME DATA\n"), 0o644))
	open, _ = tapeOpener(tape)
	err = Pack(open, &bytes.Buffer{}, openHost)
	require.ErrorContains(t, err, "tape: packing "+dataPath+": "+dataPath+" is not the file recorded")
	require.NoError(t, os.WriteFile(dataPath, []byte("more data than before\n"), 0o644))
	open, _ = tapeOpener(tape)
	err = Pack(open, &bytes.Buffer{}, openHost)
	require.ErrorContains(t, err, dataPath+" is 22 bytes, not the 10 recorded")

	// A tape that is another in the second pass (a read more) is refused.
	require.NoError(t, os.WriteFile(dataPath, data, 0o644))
	fewer, _, _ := hostTapeOf(t, linuxHeader(), append(append([]*Event(nil), evs[:16]...), end))
	open, _ = tapeOpener(fewer, tape)
	err = Pack(open, &bytes.Buffer{}, openHost)
	require.ErrorContains(t, err, "event 17 reads "+copyPath+", which the first reading of the tape did not")

	// Damage in the first pass stops it before any file is read.
	opened = nil
	open, _ = tapeOpener(tape[:len(tape)-30])
	err = Pack(open, &bytes.Buffer{}, openHost)
	var te *TruncatedError
	require.ErrorAs(t, err, &te)
	require.Empty(t, opened)
}

// Pack reads nothing when the files cannot fit in a tape, checks a file's
// size before reading it, and refuses a tape from before file events.
func TestPackChecksFirst(t *testing.T) {
	var opened []string
	openHost := func(f *File) (io.ReadCloser, fs.FileInfo, error) {
		opened = append(opened, f.Host)
		return nil, nil, errors.New("no host file in this test")
	}
	huge := func(exit uint64, host string) *Event {
		return &Event{Kind: KindFile, Pos: Position{Exit: exit}, Fact: &FileFact{Op: FileRead, Path: host, Size: MaxPackedBytes/2 + 1, SHA256: sha256.Sum256([]byte(host))}}
	}
	evs := genEvents(1, 12, true)
	evs = append(evs[:11:11], huge(1, "/a"), readFact(2, "/b", []byte("b")), huge(3, "/c"), evs[11])
	tape, _, _ := hostTapeOf(t, linuxHeader(), evs)
	open, _ := tapeOpener(tape)
	err := Pack(open, &bytes.Buffer{}, openHost)
	require.ErrorContains(t, err, "tape: packing: the files take more than the 1073741824 bytes a tape holds (event 13 reads /c, 536870913 bytes)")
	require.Empty(t, opened, "nothing is read")

	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	require.NoError(t, os.WriteFile(small, []byte("22 bytes of contents.\n"), 0o644))
	evs = append(evs[:11:11], &Event{Kind: KindFile, Fact: &FileFact{Op: FileRead, Path: small, Size: 1 << 29, SHA256: sha256.Sum256(nil)}}, evs[len(evs)-1])
	tape, _, _ = hostTapeOf(t, linuxHeader(), evs)
	open, _ = tapeOpener(tape)
	err = Pack(open, &bytes.Buffer{}, func(f *File) (io.ReadCloser, fs.FileInfo, error) {
		st, err := os.Stat(f.Host)
		return failingReader{}, st, err
	})
	require.ErrorContains(t, err, small+" is 22 bytes, not the 536870912 recorded")

	open, _ = tapeOpener(must(os.ReadFile(filepath.Join("testdata", "v4.tape"))))
	err = Pack(open, &bytes.Buffer{}, openHost)
	require.ErrorContains(t, err, "a version 4 tape names the files its program saw in its header")
	open, _ = tapeOpener(must(os.ReadFile(filepath.Join("testdata", "v3.tape"))))
	err = Pack(open, &bytes.Buffer{}, openHost)
	require.ErrorContains(t, err, "only a Linux program's tape has files to pack")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// failingReader fails a test's read: Pack must not read a file whose size
// is wrong.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("read a file of the wrong size") }
func (failingReader) Close() error             { return nil }
