package mm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A shared anonymous mapping stays shared across a fork: each side's
// write is seen by the other, with no copy-on-write, and its frames go
// back (the object idle) only when the last range mapping it goes.
func TestSharedMappingSurvivesFork(t *testing.T) {
	as, fr := newSpace(t)
	idle := 0
	o := fr.NewObject(nil, func() { idle++ })
	require.NoError(t, as.MapShared(user, user+2*page, rw, o, 0))
	require.NoError(t, as.Map(user+2*page, user+3*page, rw))
	require.NoError(t, as.Write(user, []byte("parent")))
	child, _, err := as.Clone()
	require.NoError(t, err)
	require.False(t, child.COW(user), "a shared page is never copy-on-write")
	require.True(t, child.COW(user+2*page), "a private one is")

	require.NoError(t, child.Write(user+page, []byte("child")))
	got := make([]byte, 6)
	require.NoError(t, as.Read(user+page, got[:5]))
	require.Equal(t, "child", string(got[:5]), "the parent sees the child's write")
	pa, ok := as.Shared(user + page + 3)
	cpa, _ := child.Shared(user + page + 3)
	require.True(t, ok)
	require.Equal(t, pa, cpa, "one frame: a futex there is one key")
	_, ok = as.Shared(user + 2*page)
	require.False(t, ok, "private")

	require.NoError(t, as.Unmap(user, user+3*page))
	require.Zero(t, idle, "the child still maps it")
	require.NoError(t, child.Read(user, got))
	require.Equal(t, "parent", string(got))
	used := fr.InUse()
	child.Release()
	require.Equal(t, 1, idle, "idle with the last range")
	require.Less(t, fr.InUse(), used-2*page+1, "its two frames back")
	require.Nil(t, fr.Object(o.ID))
}

// A file's object fills a page from the file when first mapped; two
// address spaces mapping it at different addresses share it; mprotect
// keeps the object, mremap moves and grows over it, MADV_DONTNEED keeps
// its contents.
func TestSharedObjectAcrossSpaces(t *testing.T) {
	as, fr := newSpace(t)
	other, err := New(fr)
	require.NoError(t, err)
	fills := map[uint64]int{}
	o := fr.NewObject(func(page uint64, b []byte) { fills[page]++; b[0] = byte('A' + page) }, nil)
	require.NoError(t, as.MapShared(user, user+2*page, rw, o, 0))
	require.NoError(t, other.MapShared(user+8*page, user+9*page, ProtRead, o, 1))
	b := make([]byte, 1)
	require.NoError(t, other.Read(user+8*page, b))
	require.Equal(t, "B", string(b), "page 1's contents")
	require.Equal(t, map[uint64]int{0: 1, 1: 1}, fills, "each page filled once")

	require.NoError(t, as.Protect(user+page, user+2*page, ProtRead))
	require.NoError(t, as.Protect(user+page, user+2*page, rw))
	require.Equal(t, []VMA{{Start: user, End: user + 2*page, Prot: rw, Obj: o}}, as.VMAs(), "split and joined again, still the object's")
	require.NoError(t, as.Write(user+page, []byte("b")))
	require.NoError(t, as.Zero(user, user+2*page))
	require.NoError(t, other.Read(user+8*page, b))
	require.Equal(t, "b", string(b), "written through the first, seen through the second, kept by MADV_DONTNEED")

	require.True(t, as.Within(user, user+2*page))
	require.NoError(t, as.Remap(user+page, page, user+16*page, 2*page))
	require.NoError(t, as.Read(user+16*page, b))
	require.Equal(t, "b", string(b), "moved with its page")
	require.NoError(t, as.Extend(user+18*page, user+19*page))
	require.NoError(t, as.Read(user+18*page, b))
	require.Equal(t, "D", string(b), "grown over the object's next pages")
	require.Equal(t, 1+3+1, o.mapped, "the ranges' pages")

	sf := gobRoundTrip(t, fr.Save())
	require.NoError(t, sf.Check(fr.ram.Size(), 2))
	ss := gobRoundTrip(t, as.Save(func([]byte) int { return -1 }))
	require.NoError(t, ss.Check(Limits{Frames: &sf, SiteLen: func(uint8) bool { return false }}))
	fr2 := RestoreFrames(fr.ram, nil, &sf)
	as2 := RestoreSpace(fr2, ss, 1, nil)
	require.Equal(t, fr.Save(), fr2.Save())
	require.Equal(t, as.Save(func([]byte) int { return -1 }), as2.Save(func([]byte) int { return -1 }))
	require.Same(t, fr2.Object(o.ID), as2.VMAs()[0].Obj)
}
