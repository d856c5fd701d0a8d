package tape

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/v1.tape")

// TestGoldenV1 pins format version 1: the writer must still produce the
// bytes of testdata/v1.tape, and the reader must still read them. A change
// here is a format change: bump FormatVersion and keep reading version 1.
func TestGoldenV1(t *testing.T) {
	data, evs, _ := smallTape(t, 4, 5, 3)
	golden := filepath.Join("testdata", "v1.tape")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, data, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, want, data, "the writer no longer produces format version 1; run with -update only if the format version changed too")

	h, got, err := readFile(t, golden)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, smallHeader(), h)
	require.Equal(t, evs, got)
}
