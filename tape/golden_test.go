package tape

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden tape of the current format version")

// TestGoldenV1 keeps format version 1 readable: testdata/v1.tape was
// written by the version 1 writer.
func TestGoldenV1(t *testing.T) {
	_, evs, _ := smallTape(t, 4, 5, 3)
	h, got, err := readFile(t, filepath.Join("testdata", "v1.tape"))
	require.ErrorIs(t, err, io.EOF)
	want := smallHeader()
	want.Version = 1
	require.Equal(t, want, h)
	require.Equal(t, evs, got)
}

// TestGoldenV2 keeps format version 2 readable: testdata/v2.tape was
// written by the version 2 writer.
func TestGoldenV2(t *testing.T) {
	_, evs, _ := smallTape(t, 4, 5, 3)
	h, got, err := readFile(t, filepath.Join("testdata", "v2.tape"))
	require.ErrorIs(t, err, io.EOF)
	want := smallHeader()
	want.Version = 2
	require.Equal(t, want, h)
	require.Equal(t, evs, got)
}

// TestGoldenV3 keeps format version 3 readable: testdata/v3.tape was
// written by the version 3 writer (chunks with host frames between and
// after them).
func TestGoldenV3(t *testing.T) {
	_, evs, hosts := hostTape(t)
	want := smallHeader()
	want.Version = 3
	readGolden(t, filepath.Join("testdata", "v3.tape"), want, evs, hosts)
}

// TestGoldenV4 keeps format version 4 readable: testdata/v4.tape was
// written by the version 4 writer (a Linux program's header, without
// files; host frames).
func TestGoldenV4(t *testing.T) {
	_, evs, hosts := hostTape(t)
	want := smallHeader()
	want.Version = 4
	want.Linux = &Linux{Path: "/usr/bin/pigz", Argv: []string{"pigz", "-p", "4"}, Env: []string{"HOME=/", "LANG=C"},
		Random: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, Epoch: want.Created, UID: LegacyID, GID: LegacyID}
	readGolden(t, filepath.Join("testdata", "v4.tape"), want, evs, hosts)
}

// Version 5 (root, mounts, packed files, file events) reads as it was
// written, its program run as LegacyID.
func TestGoldenV5(t *testing.T) {
	_, evs, hosts := hostTapeOf(t, factHeader(), factEventsOf(5))
	want := factHeader()
	want.Version = 5
	want.Linux.UID, want.Linux.GID, want.Linux.Groups = LegacyID, LegacyID, nil
	readGolden(t, filepath.Join("testdata", "v5.tape"), want, evs, hosts)
}

// Version 6 (the user the program ran as; listings in name order) reads
// as it was written.
func TestGoldenV6(t *testing.T) {
	_, evs, hosts := hostTapeOf(t, factHeader(), factEventsOf(6))
	want := factHeader()
	want.Version = 6
	want.Linux.Groups = nil // since version 7
	readGolden(t, filepath.Join("testdata", "v6.tape"), want, evs, hosts)
}

// Version 7 reads as it was written.
func TestGoldenV7(t *testing.T) {
	_, evs, hosts := hostTapeOf(t, factHeader(), factEvents())
	want := factHeader()
	want.Version = 7
	readGolden(t, filepath.Join("testdata", "v7.tape"), want, evs, hosts)
}

// Version 8 reads as it was written (it differs from 9 only in how the
// end's RAM hash was taken).
func TestGoldenV8(t *testing.T) {
	_, evs, hosts := hostTapeOf(t, factHeader(), factEvents())
	want := factHeader()
	want.Version = 8
	readGolden(t, filepath.Join("testdata", "v8.tape"), want, evs, hosts)
}

// TestGoldenV9 pins format version 9: the writer must still produce the
// bytes of testdata/v9.tape (a Linux program's header with root, mounts,
// stdin, packed files and its user; file events of every op and form, a
// listing in the host's order; host frames), and the reader must still
// read them. A change here is a format change: bump FormatVersion and
// keep reading version 9.
func TestGoldenV9(t *testing.T) {
	data, evs, hosts := hostTapeOf(t, factHeader(), factEvents())
	golden := filepath.Join("testdata", "v9.tape")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, data, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, want, data, "the writer no longer produces format version 9; run with -update only if the format version changed too")
	readGolden(t, golden, factHeader(), evs, hosts)
}

// readGolden reads the tape at path and checks it holds h, evs and the
// host frames hosts.
func readGolden(t *testing.T, path string, h *Header, evs []*Event, hosts []string) {
	t.Helper()
	r, err := Open(path)
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, h, r.Header())
	var got []*Event
	var gotHosts []string
	r.OnHost(func(count uint32, body []byte) error {
		gotHosts = append(gotHosts, fmt.Sprintf("%d:%s", count, body))
		return nil
	})
	for {
		e, err := r.Next()
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		got = append(got, e)
	}
	require.Equal(t, evs, got)
	require.Equal(t, hosts, gotHosts, "every host frame, in file order, the one after the end included")
	require.Equal(t, len(hosts), r.HostFrames())
}

// A Linux program's packed files travel in FILE frames after the image and
// come back whole, an empty one as empty (not nil: not packed); a frame
// whose bytes differ from the recorded hash is damage, named. The writer
// lists only packed files.
func TestPackedFiles(t *testing.T) {
	h := linuxHeader()
	one, two := []byte("first file\n"), []byte("second, packed\n")
	h.Linux.Files = []File{
		{Host: "/host/a", Size: int64(len(one)), SHA256: sha256.Sum256(one), Data: one},
		{Host: "/host/empty", Size: 0, SHA256: sha256.Sum256(nil), Data: []byte{}},
		{Host: "/host/c", Size: int64(len(two)), SHA256: sha256.Sum256(two), Data: two},
	}
	data, evs, hosts := hostTapeWith(t, h)
	path := filepath.Join(t.TempDir(), "p.tape")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	readGolden(t, path, h, evs, hosts)
	r, err := Open(path)
	require.NoError(t, err)
	got, ok := r.Header().Linux.Packed("/host/empty", 0, sha256.Sum256(nil))
	require.True(t, ok, "an empty file is packed too")
	require.Empty(t, got)
	r.Close()

	i := bytes.Index(data, two)
	require.Positive(t, i)
	data[i] ^= 1
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err = Open(path)
	require.True(t, IsDamaged(err), "%v", err)
	require.ErrorContains(t, err, "packed file crc mismatch")

	h.Linux.Files[0].Data = []byte("not the bytes")
	_, err = NewWriter(&bytes.Buffer{}, h)
	require.ErrorContains(t, err, `packed file "/host/a"`)
	h.Linux.Files[0].Data = nil
	_, err = NewWriter(&bytes.Buffer{}, h)
	require.ErrorContains(t, err, `file "/host/a" is listed without its contents`)
}
