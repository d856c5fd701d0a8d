package linux

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// readSized reads a file whatever its stat said: the size it had, less
// (it shrank) or more (it grew, the buffer grows too), and an empty one.
func TestReadSized(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 10_000)
	for _, size := range []int64{int64(len(data)), 10, 0, -1, int64(len(data)) * 3} {
		got, err := readSized(bytes.NewReader(data), size)
		require.NoError(t, err)
		require.Equal(t, data, got, "stat said %d", size)
	}
	got, err := readSized(bytes.NewReader(nil), 100)
	require.NoError(t, err)
	require.Empty(t, got)
}
