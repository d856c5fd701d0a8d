package linux_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/linux"
)

// A kernel reads nothing of the host when it is made, only as the
// program looks: a program whose given file is gone by then still gets a
// kernel, and a fresh one for another run of it is the same program.
func TestNewReadsNoHostFile(t *testing.T) {
	exe, err := os.Executable() // any x86-64 ELF executable
	require.NoError(t, err)
	raw, err := os.ReadFile(exe)
	require.NoError(t, err)
	host := filepath.Join(t.TempDir(), "data")
	p := linux.Program{Path: "/bin/prog", Image: raw, Argv: []string{"prog"}, Epoch: time.Unix(1700000000, 0),
		Mounts: []linux.Mount{{Host: host, Guest: "/data"}}}
	k, err := linux.New(p)
	require.NoError(t, err, "the given file is read when the program starts, not before")
	for range 2 {
		fresh, err := k.Fresh()
		require.NoError(t, err)
		require.Equal(t, k.Program(), fresh.Program())
	}
	require.Equal(t, "/", k.Program().Root, "the host's root by default")
}
