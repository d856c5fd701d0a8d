package linux_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/linux"
)

// A fresh kernel (a split replay's segment) has the recorded files without
// reading the host again: the host file may be gone by then.
func TestFreshKernelReadsNoHostFile(t *testing.T) {
	exe, err := os.Executable() // any x86-64 ELF executable
	require.NoError(t, err)
	raw, err := os.ReadFile(exe)
	require.NoError(t, err)
	host := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.WriteFile(host, []byte("recorded contents"), 0o644))
	live, err := linux.New(linux.Program{Path: "/bin/prog", Image: raw, Argv: []string{"prog"}, Epoch: time.Unix(1700000000, 0),
		Files: []linux.File{{Host: host, Guest: "/data"}}})
	require.NoError(t, err)
	recorded, err := linux.New(live.Program()) // as a replay builds it: read and hashed
	require.NoError(t, err)

	require.NoError(t, os.Remove(host))
	_, err = linux.New(live.Program())
	require.Error(t, err, "a kernel built anew reads the host file")
	for range 2 {
		fresh, err := recorded.Fresh()
		require.NoError(t, err)
		data, ok := fresh.Contents("/data")
		require.True(t, ok)
		require.Equal(t, "recorded contents", string(data))
		require.Equal(t, recorded.Program(), fresh.Program())
	}
}
