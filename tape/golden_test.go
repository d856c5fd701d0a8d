package tape

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/v2.tape")

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

// TestGoldenV2 pins format version 2: the writer must still produce the
// bytes of testdata/v2.tape, and the reader must still read them. A change
// here is a format change: bump FormatVersion and keep reading version 2.
func TestGoldenV2(t *testing.T) {
	data, evs, _ := smallTape(t, 4, 5, 3)
	golden := filepath.Join("testdata", "v2.tape")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, data, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, want, data, "the writer no longer produces format version 2; run with -update only if the format version changed too")

	h, got, err := readFile(t, golden)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, smallHeader(), h)
	require.Equal(t, evs, got)
}
