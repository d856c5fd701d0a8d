package vfs

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestFDTable(t *testing.T) {
	var out bytes.Buffer
	fds := NewFDTable(NewConsole(&out))
	stdout, err := fds.Get(1)
	require.NoError(t, err)
	_, err = stdout.Write([]byte("hi"), 0)
	require.NoError(t, err)
	require.Equal(t, "hi", out.String())
	_, err = fds.Get(3)
	require.Equal(t, unix.EBADF, err)

	// dup: the lowest free descriptor at or above the minimum, sharing
	// the open file.
	fd, err := fds.Install(stdout, false, 0)
	require.NoError(t, err)
	require.Equal(t, 3, fd)
	fd, err = fds.Install(stdout, true, 10)
	require.NoError(t, err)
	require.Equal(t, 10, fd)
	require.Equal(t, 3, stdout.Refs)
	fds.Set(0, stdout, false) // dup2 over stdin
	require.Equal(t, 4, stdout.Refs)

	// close-on-exec closes only the marked ones; a fork shares them all.
	child := fds.Clone()
	require.Equal(t, 8, stdout.Refs)
	fds.CloseOnExec()
	require.Equal(t, []int{0, 1, 2, 3}, fds.Sorted())
	child.CloseAll()
	require.Empty(t, child)
	require.Equal(t, 3, stdout.Refs)

	// RLIMIT_NOFILE
	for range MaxFDs - 4 {
		_, err := fds.Install(stdout, false, 0)
		require.NoError(t, err)
	}
	_, err = fds.Install(stdout, false, 0)
	require.Equal(t, unix.EMFILE, err)
}

// The last descriptor of a node's open file releases the node: a removed
// file is freed then.
func TestCloseReleases(t *testing.T) {
	fs, b := tree(t)
	n, _ := fs.Lookup("/etc/passwd")
	fds := FDTable{}
	fd, err := fds.Install(fs.Open(n, "/etc/passwd", unix.O_RDONLY), false, 0)
	require.NoError(t, err)
	dup, err := fds.Install(fds[fd].File, false, 0)
	require.NoError(t, err)
	e, _ := fs.Parent("/etc/passwd")
	require.NoError(t, fs.Remove(e, false))
	nodes := b[Nodes]
	fds.Close(fd)
	require.Equal(t, nodes, b[Nodes], "one descriptor still open")
	fds.Close(dup)
	require.Equal(t, nodes-1, b[Nodes])
}
