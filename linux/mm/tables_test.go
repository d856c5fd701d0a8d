package mm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An entry set is the one the walk finds; once the guest has run on the
// tables, a change copies them up to a new root and retires the old ones,
// and the walk from the new root finds both entries.
func TestSetPTEThenLeaf(t *testing.T) {
	as, fr := newSpace(t)
	va := uint64(user + 5*page)
	require.NoError(t, as.setPTE(va, 0x300000|ptePresent|pteUser))
	pte, err := as.Leaf(va)
	require.NoError(t, err)
	require.Equal(t, uint64(0x300000|ptePresent|pteUser), pte)
	pte, err = as.Leaf(va + page)
	require.NoError(t, err)
	require.Zero(t, pte, "nothing mapped next to it")
	stub, err := as.Leaf(StubPage)
	require.NoError(t, err)
	require.Equal(t, uint64(StubPage|ptePresent|pteUser|pteAccessed), stub, "the stub page, user-executable")

	root := as.CR3()
	as.Published()
	require.NoError(t, as.setPTE(va+page, 0x301000|ptePresent))
	require.NotEqual(t, root, as.CR3(), "a published root is copied, not changed")
	require.Contains(t, fr.retired, root)
	for _, v := range []uint64{va, va + page} {
		pte, err := as.Leaf(v)
		require.NoError(t, err)
		require.NotZero(t, pte&ptePresent, "%#x", v)
	}

	// Unmapping the only two pages under a leaf table frees the tables.
	tables := len(as.tables)
	require.NoError(t, as.setPTE(va, 0))
	require.NoError(t, as.setPTE(va+page, 0))
	require.NoError(t, as.prune(va))
	require.Less(t, len(as.tables), tables, "empty tables pruned")
	pte, err = as.Leaf(va)
	require.NoError(t, err)
	require.Zero(t, pte)
}

func TestTablesForBoundsTheTablesTaken(t *testing.T) {
	require.Equal(t, uint64(4), tablesFor([]uint64{user}))
	require.Equal(t, uint64(5), tablesFor([]uint64{user, user + 2<<20}), "two leaf tables")
	require.Equal(t, uint64(4), tablesForRange(user, user+2<<20))
}
