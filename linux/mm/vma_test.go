package mm

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

const rw = ProtRead | ProtWrite

// Neighbours of one protection merge; an mprotect of the middle splits
// one range in three; an munmap of the middle leaves two, frees the
// pages' frames and makes those pages fault.
func TestVMACarving(t *testing.T) {
	as, fr := newSpace(t)
	require.NoError(t, as.Map(user, user+2*page, rw))
	require.NoError(t, as.Map(user+2*page, user+4*page, rw))
	require.Equal(t, []VMA{{Start: user, End: user + 4*page, Prot: rw}}, as.VMAs(), "merged")

	require.NoError(t, as.Protect(user+page, user+3*page, ProtRead))
	require.Equal(t, []VMA{{Start: user, End: user + page, Prot: rw}, {Start: user + page, End: user + 3*page, Prot: ProtRead}, {Start: user + 3*page, End: user + 4*page, Prot: rw}}, as.VMAs(), "split")
	require.ErrorIs(t, as.Write(user+page, []byte{1}), ErrFault, "read-only now")
	require.NoError(t, as.Protect(user+page, user+3*page, rw))
	require.Equal(t, []VMA{{Start: user, End: user + 4*page, Prot: rw}}, as.VMAs(), "merged again")

	used := fr.InUse()
	require.NoError(t, as.Unmap(user+page, user+3*page))
	require.Equal(t, []VMA{{Start: user, End: user + page, Prot: rw}, {Start: user + 3*page, End: user + 4*page, Prot: rw}}, as.VMAs(), "a hole in the middle")
	require.Equal(t, used-2*page, fr.InUse(), "the hole's two frames freed")
	_, ok := as.Frame(user + page)
	require.False(t, ok)
	require.ErrorIs(t, as.Read(user+2*page, make([]byte, 1)), ErrFault)
	require.False(t, as.Covered(user, user+4*page))
	require.True(t, as.Free(user+page, user+3*page))
	require.ErrorIs(t, as.Protect(user, user+4*page, ProtRead), ErrUnmapped, "part of it is not mapped")

	require.NoError(t, as.Unmap(user, user+4*page))
	require.Empty(t, as.VMAs())
	require.Equal(t, fr.InUse(), uint64(len(as.tables))*page, "only the tables are left")
}

// A change that would leave more ranges than the limit is refused, and
// changes nothing.
func TestRangesLimit(t *testing.T) {
	var r Ranges[VMA]
	_, err := r.set(VMA{Start: 0, End: 10 * page, Prot: ProtRead}, 1)
	require.NoError(t, err)
	_, err = r.set(VMA{Start: 4 * page, End: 5 * page, Prot: rw}, 2)
	require.True(t, errors.Is(err, ErrMapCount), "a split to 3 of at most 2: %v", err)
	require.Equal(t, []VMA{{Start: 0, End: 10 * page, Prot: ProtRead}}, r.All())
	undo, err := r.remove(4*page, 5*page, 2)
	require.NoError(t, err)
	require.Equal(t, []VMA{{Start: 0, End: 4 * page, Prot: ProtRead}, {Start: 5 * page, End: 10 * page, Prot: ProtRead}}, r.All())
	undo()
	require.Equal(t, []VMA{{Start: 0, End: 10 * page, Prot: ProtRead}}, r.All(), "undone")
}

// The file mappings are the same kind of list: a mapping over the middle
// of another splits it, the part after it keeping its file offset; two
// mappings side by side stay two.
func TestFileMappingsCarve(t *testing.T) {
	as, _ := newSpace(t)
	as.AddFile(Mapping{Path: "/lib", Start: user, End: user + 4*page, Offset: 0x1000}, []byte("lib"))
	as.AddFile(Mapping{Path: "/data", Start: user + page, End: user + 2*page}, nil)
	as.AddFile(Mapping{Path: "/next", Start: user + 4*page, End: user + 5*page}, nil)
	var got []string
	for _, m := range as.Files() {
		got = append(got, m.Path)
	}
	require.Equal(t, []string{"/lib", "/data", "/lib", "/next"}, got)
	hi := as.FileAt(user + 3*page)
	require.Equal(t, user+2*page, hi.Start)
	require.Equal(t, uint64(0x1000+2*page), hi.Offset)
	require.Equal(t, uint64(0x1000+2*page+0x10), hi.FileOffset(user+2*page+0x10))
	require.Equal(t, []byte("lib"), hi.Data())

	require.NoError(t, as.Map(user, user+5*page, rw))
	require.NoError(t, as.Unmap(user+2*page, user+3*page))
	require.Nil(t, as.FileAt(user+2*page))
	require.Equal(t, uint64(0x1000+3*page), as.FileAt(user+3*page).Offset)
}
