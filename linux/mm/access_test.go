package mm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A read or write that crosses a page boundary lands in each page's own
// frame (not contiguous ones); one that runs into an unmapped page
// faults.
func TestAccessAcrossPages(t *testing.T) {
	as, fr := newSpace(t)
	require.NoError(t, as.Map(user, user+2*page, rw)) // the first page's tables are taken between the two
	a, _ := as.Frame(user)
	b, _ := as.Frame(user + page)
	require.NotEqual(t, a+page, b, "frames not adjacent: the access must split")

	msg := []byte("across the boundary")
	va := user + page - 6
	require.NoError(t, as.Write(va, msg))
	got := make([]byte, len(msg))
	require.NoError(t, as.Read(va, got))
	require.Equal(t, msg, got)
	tail, err := fr.ram.Slice(b, uint64(len(msg)-6))
	require.NoError(t, err)
	require.Equal(t, msg[6:], tail, "the rest in the second page's frame")

	require.NoError(t, as.PutUint64(user+page-4, 0x1122334455667788))
	s := []byte("name\x00")
	require.NoError(t, as.Write(user+page-2, s))
	name, err := as.ReadString(user+page-2, 10)
	require.NoError(t, err)
	require.Equal(t, "name", name)
	_, err = as.ReadString(user+page-2, 3)
	require.ErrorIs(t, err, ErrNameTooLong)

	require.ErrorIs(t, as.Read(user+2*page-2, make([]byte, 4)), ErrFault, "into an unmapped page")
	require.ErrorIs(t, as.Read(MinUserAddr-page, make([]byte, 1)), ErrFault, "the system area")
	require.ErrorIs(t, as.Load(user+2*page, []byte{1}), ErrFault)
}

// Zero clears the mapped pages of a range, and a shared one gets a frame
// of its own first.
func TestZero(t *testing.T) {
	as, _ := newSpace(t)
	require.NoError(t, as.Map(user, user+page, rw))
	require.NoError(t, as.Write(user, []byte{7}))
	c, _, err := as.Clone()
	require.NoError(t, err)
	require.NoError(t, c.Zero(user, user+page))
	b := make([]byte, 1)
	require.NoError(t, c.Read(user, b))
	require.Zero(t, b[0])
	require.NoError(t, as.Read(user, b))
	require.Equal(t, byte(7), b[0], "the other holder keeps its contents")
}
