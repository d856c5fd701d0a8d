package vfs

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Byte-range locks: conflicts between owners, a range split by an
// unlock in its middle, and every range charged to the budget — ENOLCK
// past its bound, given back when the owner's locks go.
func TestRangeLocks(t *testing.T) {
	fs, b := tree(t)
	n, _ := fs.Lookup("/etc/passwd")
	require.NoError(t, n.SetLock(b, "p1", 1, false, true, 0, 99))
	require.Equal(t, ErrWouldBlock, n.SetLock(b, "p2", 2, false, false, 50, 50), "a read inside another's write lock")
	l, ok := n.Conflict("p2", false, 10, 20)
	require.True(t, ok)
	require.Equal(t, 1, l.PID)
	require.NoError(t, n.SetLock(b, "p1", 1, true, false, 40, 59), "an unlock in the middle splits the range")
	require.EqualValues(t, 2, b[Locks])
	require.NoError(t, n.SetLock(b, "p2", 2, false, false, 45, 55))

	b[Locks] = MaxLocks
	require.Equal(t, unix.ENOLCK, n.SetLock(b, "p3", 3, false, false, 200, 200), "past the bound")
	_, ok = n.Conflict("p4", true, 200, 200)
	require.False(t, ok, "nothing added on ENOLCK")
	b[Locks] = 3
	n.ReleaseLocks("p1")
	require.EqualValues(t, 1, b[Locks], "p1's two ranges given back")
	require.True(t, n.HasLocks())
	n.ReleaseLocks("p2")
	require.Zero(t, b[Locks])
	require.False(t, n.HasLocks())
}
