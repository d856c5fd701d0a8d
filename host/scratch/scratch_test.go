package scratch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Dir names its directory by this process's pid and removes the scratch
// directories of dead processes, and only those: a live process's, a
// directory of another name and a symbolic link stay.
func TestDirReapsTheDeadOnly(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	dead := gone.ProcessState.Pid()

	mk := func(name string) string {
		p := filepath.Join(tmp, name)
		require.NoError(t, os.MkdirAll(filepath.Join(p, "db"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(p, "db", "data"), []byte("x"), 0o644))
		return p
	}
	stale := mk(fmt.Sprintf("reprise-segments-%d-123", dead))
	staleOverlay := mk(fmt.Sprintf("reprise-overlay-%d-9", dead))
	live := mk(fmt.Sprintf("reprise-segments-%d-456", os.Getppid()))
	other := mk(fmt.Sprintf("reprise-cli%d", dead))
	link := filepath.Join(tmp, fmt.Sprintf("reprise-segments-%d-7", dead))
	require.NoError(t, os.Symlink(other, link))

	dir, err := Dir("segments")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(filepath.Base(dir), fmt.Sprintf("reprise-segments-%d-", os.Getpid())), dir)
	require.NoDirExists(t, stale)
	require.NoDirExists(t, staleOverlay)
	require.DirExists(t, live)
	require.FileExists(t, filepath.Join(other, "db", "data"))
	require.DirExists(t, dir)
	_, err = os.Lstat(link)
	require.NoError(t, err, "a symbolic link is not a scratch directory")
}
