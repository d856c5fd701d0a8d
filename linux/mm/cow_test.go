package mm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A fork shares each frame, both sides read-only where the range is
// writable; a write copies the frame for the writer alone; the last
// holder keeps the frame without a copy.
func TestCopyOnWrite(t *testing.T) {
	parent, fr := newSpace(t)
	require.NoError(t, parent.Map(user, user+2*page, rw))
	require.NoError(t, parent.Write(user, []byte("parent")))
	pa, _ := parent.Frame(user)

	child, _, err := parent.Clone()
	require.NoError(t, err)
	cpa, _ := child.Frame(user)
	require.Equal(t, pa, cpa, "the same frame")
	require.Equal(t, 2, fr.holders(pa))
	for _, as := range []*Space{parent, child} {
		require.True(t, as.COW(user))
		pte, err := as.Leaf(user)
		require.NoError(t, err)
		require.Zero(t, pte&pteWrite, "read-only until written")
	}

	require.NoError(t, child.Write(user, []byte("child!")))
	cpa, _ = child.Frame(user)
	require.NotEqual(t, pa, cpa, "the writer got a copy")
	require.False(t, child.COW(user))
	pte, err := child.Leaf(user)
	require.NoError(t, err)
	require.Equal(t, cpa|ptePresent|pteUser|pteWrite, pte)
	got := make([]byte, 6)
	require.NoError(t, parent.Read(user, got))
	require.Equal(t, "parent", string(got), "the other holder's frame is untouched")
	require.Equal(t, 1, fr.holders(pa))

	// The parent is the last holder: its write fault takes the frame as
	// it is, rewriting the entry in place.
	root := parent.CR3()
	require.NoError(t, parent.BreakCOWFault(user))
	ppa, _ := parent.Frame(user)
	require.Equal(t, pa, ppa, "no copy for the last holder")
	require.Equal(t, root, parent.CR3(), "in place: no new root")
	pte, err = parent.Leaf(user)
	require.NoError(t, err)
	require.NotZero(t, pte&pteWrite)

	// Releasing the child frees its frames, not the parent's.
	child.Release()
	require.NoError(t, parent.Read(user, got))
	require.Equal(t, "parent", string(got))
	require.Contains(t, fr.free, cpa)
	require.NotContains(t, fr.free, pa)
}

// A fork's read-only pages are shared without copy-on-write: no write can
// reach them.
func TestCloneKeepsReadOnlyPagesShared(t *testing.T) {
	parent, fr := newSpace(t)
	require.NoError(t, parent.Map(user, user+page, ProtRead))
	child, _, err := parent.Clone()
	require.NoError(t, err)
	pa, _ := parent.Frame(user)
	require.Equal(t, 2, fr.holders(pa))
	require.False(t, child.COW(user))
	require.ErrorIs(t, child.Write(user, []byte{1}), ErrFault)
}
