package tape

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A tape names its files by content: a file without a hash (all zeros
// once meant "not recorded", and a replay skipped the check) is refused
// by the writer and is damage to the reader; so is a mode that is not
// permission bits. The mode is kept.
func TestFileHashAndModeAreChecked(t *testing.T) {
	data := []byte("contents\n")
	file := File{Guest: "/a", Host: "/host/a", Size: int64(len(data)), SHA256: sha256.Sum256(data), Mode: 0o755}
	h := smallHeader()
	h.Linux = &Linux{Path: "/bin/x", Argv: []string{"x"}, Epoch: h.Created, Files: []File{file}}
	var buf bytes.Buffer
	_, err := NewWriter(&buf, h)
	require.NoError(t, err)
	r, err := NewReader(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Equal(t, uint32(0o755), r.Header().Linux.Files[0].Mode)

	h.Linux.Files[0].SHA256 = [32]byte{}
	_, err = NewWriter(&bytes.Buffer{}, h)
	require.ErrorContains(t, err, `file "/a" (host "/host/a") has no SHA-256 recorded`)
	h.Linux.Files[0] = file
	h.Linux.Files[0].Mode = 0o4755
	_, err = NewWriter(&bytes.Buffer{}, h)
	require.ErrorContains(t, err, "mode 04755 is not permission bits")

	forged := forgeHeader(t, func(j *headerJSON) {
		j.Linux = &linuxJSON{Path: "/bin/x", Argv: []string{"x"}, Random: strings.Repeat("00", 16),
			Files: []fileJSON{{Guest: "/etc/shadow", Host: "/etc/shadow", Size: 1, SHA256: strings.Repeat("00", 32)}}}
	})
	_, err = NewReader(bytes.NewReader(forged))
	require.True(t, IsDamaged(err), "%v", err)
	require.ErrorContains(t, err, "has no SHA-256 recorded")
}

// packTape writes an unpacked tape of a Linux program with files and
// returns a reader of it.
func packTape(t *testing.T, files []File) *Reader {
	t.Helper()
	h := smallHeader()
	h.Linux = &Linux{Path: "/bin/x", Argv: []string{"x"}, Epoch: time.Unix(1700000000, 0).UTC(), Files: files}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	r, err := NewReader(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	return r
}

// Pack reads nothing when the files cannot fit in a tape, reads a content
// named many times once, checks a file's size before reading it, and
// keeps a mode or fills in a missing one from the host copy.
func TestPackReadsOnceAndChecksFirst(t *testing.T) {
	dir := t.TempDir()
	data := []byte("#!/bin/sh\necho packed\n")
	exe := filepath.Join(dir, "exe")
	require.NoError(t, os.WriteFile(exe, data, 0o700))
	sum := sha256.Sum256(data)
	var opened []string
	open := func(f *File) (io.ReadCloser, fs.FileInfo, error) {
		opened = append(opened, f.Host)
		file, err := os.Open(f.Host)
		if err != nil {
			return nil, nil, err
		}
		st, err := file.Stat()
		return file, st, err
	}

	named := func(guest string, mode uint32) File {
		return File{Guest: guest, Host: exe, Size: int64(len(data)), SHA256: sum, Mode: mode}
	}
	var out bytes.Buffer
	require.NoError(t, Pack(packTape(t, []File{named("/a", 0), named("/b", 0o644), named("/c", 0)}), &out, open))
	require.Equal(t, []string{exe}, opened, "one content, read once")
	r, err := NewReader(bytes.NewReader(out.Bytes()))
	require.NoError(t, err)
	for i, mode := range []uint32{0o755, 0o644, 0o755} { // the tape's, else the host's
		f := r.Header().Linux.Files[i]
		require.Equal(t, data, f.Data, f.Guest)
		require.Equal(t, mode, f.Mode, f.Guest)
	}

	opened = nil
	huge := named("/huge", 0)
	huge.Size = MaxPackedBytes/2 + 1
	err = Pack(packTape(t, []File{huge, named("/a", 0), huge}), &bytes.Buffer{}, open)
	require.ErrorContains(t, err, "the files take more than the 1073741824 bytes a tape holds")
	require.Empty(t, opened, "nothing is read")

	wrong := named("/a", 0)
	wrong.Size = 1 << 29
	err = Pack(packTape(t, []File{wrong}), &bytes.Buffer{}, func(f *File) (io.ReadCloser, fs.FileInfo, error) {
		file, st, err := open(f)
		if err == nil {
			file.Close()
		}
		return failingReader{}, st, err
	})
	require.ErrorContains(t, err, exe+" is 22 bytes, not the 536870912 recorded")
}

// failingReader fails a test's read: Pack must not read a file whose size
// is wrong.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("read a file of the wrong size") }
func (failingReader) Close() error             { return nil }
