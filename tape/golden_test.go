package tape

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/v3.tape")

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

// TestGoldenV3 pins format version 3: the writer must still produce the
// bytes of testdata/v3.tape (chunks with host frames between and after
// them), and the reader must still read them. A change here is a format
// change: bump FormatVersion and keep reading version 3.
func TestGoldenV3(t *testing.T) {
	data, evs, hosts := hostTape(t)
	golden := filepath.Join("testdata", "v3.tape")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, data, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, want, data, "the writer no longer produces format version 3; run with -update only if the format version changed too")

	r, err := Open(golden)
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, smallHeader(), r.Header())
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
