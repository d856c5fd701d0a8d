package mm

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/vmm/memory"
)

// A lazy range takes no frame when mapped; a read of an untouched page
// sees zeros and leaves it untouched; a write, or FaultIn (the program's
// fault), gives that page alone a zeroed frame, its entry written in
// place (no new root) with the range's protection.
func TestLazyPagesComeWhenTouched(t *testing.T) {
	as, fr := newSpace(t)
	used := fr.InUse()
	require.NoError(t, as.MapLazy(user, user+512*page, rw))
	require.Equal(t, used, fr.InUse(), "no frame, no table for an untouched range")
	pages, _ := as.Resident()
	require.Zero(t, pages)

	got := []byte("xxxx")
	require.NoError(t, as.Read(user+3*page-2, got))
	require.Equal(t, make([]byte, 4), got, "untouched pages read as zeros")
	_, ok := as.Frame(user + 2*page)
	require.False(t, ok, "and stay untouched")

	require.NoError(t, as.Write(user+5*page+8, []byte("stack")))
	pa, ok := as.Frame(user + 5*page)
	require.True(t, ok)
	require.NoError(t, as.Read(user+5*page+8, got))
	require.Equal(t, "stac", string(got))
	pages, _ = as.Resident()
	require.Equal(t, 1, pages)

	root := as.CR3()
	as.Published() // the guest runs on it: what follows must not copy
	ok, err := as.FaultIn(user + 300*page)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, root, as.CR3(), "in place: no new root")
	pte, err := as.Leaf(user + 300*page)
	require.NoError(t, err)
	fpa, _ := as.Frame(user + 300*page)
	require.Equal(t, fpa|ptePresent|pteUser|pteWrite, pte)
	require.NotEqual(t, pa, fpa)

	for _, va := range []uint64{user + 300*page, user + 600*page, user - page} {
		ok, err := as.FaultIn(va)
		require.NoError(t, err)
		require.False(t, ok, "%#x: touched already, or not in a lazy range", va)
	}
	require.ErrorIs(t, as.Write(user+600*page, got), ErrFault, "outside the range")

	// Read-only, it stays lazy: a read sees zeros, a write is refused.
	require.NoError(t, as.Protect(user, user+512*page, ProtRead))
	require.NoError(t, as.Read(user+7*page, got))
	require.ErrorIs(t, as.Write(user+7*page, got), ErrFault)
	_, ok = as.Frame(user + 7*page)
	require.False(t, ok)
}

// A fork's child has the parent's untouched pages untouched and its
// touched ones copy-on-write; each side's first touch of an untouched
// page is its own.
func TestLazyPagesAcrossAFork(t *testing.T) {
	parent, fr := newSpace(t)
	require.NoError(t, parent.MapLazy(user, user+64*page, rw))
	require.NoError(t, parent.Write(user, []byte("parent")))
	child, _, err := parent.Clone()
	require.NoError(t, err)
	require.True(t, child.COW(user))
	_, ok := child.Frame(user + page)
	require.False(t, ok)

	require.NoError(t, child.Write(user+page, []byte("child")))
	_, ok = parent.Frame(user + page)
	require.False(t, ok, "the child's touch is its own")
	got := make([]byte, 5)
	require.NoError(t, parent.Read(user+page, got))
	require.Equal(t, make([]byte, 5), got)
	cpa, _ := child.Frame(user + page)
	require.Equal(t, 1, fr.holders(cpa))
}

// Short of frames, a touch changes nothing and says so.
func TestLazyPageWithoutFrames(t *testing.T) {
	ram, err := memory.New(4 << 20)
	require.NoError(t, err)
	defer ram.Close()
	fr := NewFrames(ram, nil)
	as, err := New(fr)
	require.NoError(t, err)
	require.NoError(t, as.MapLazy(user, user+64*page, rw))
	for fr.available() > 0 {
		_, err := fr.alloc()
		require.NoError(t, err)
	}
	ok, err := as.FaultIn(user)
	require.ErrorIs(t, err, ErrNoMemory)
	require.False(t, ok)
	_, ok = as.Frame(user)
	require.False(t, ok)
	require.ErrorIs(t, as.Write(user, []byte{1}), ErrNoMemory)
}

// BenchmarkExecStack is what an exec's 8 MiB stack costs the VMM, mapped
// and then cloned by a fork: every page given a frame when mapped, and
// lazily (a few pages touched), side by side.
func BenchmarkExecStack(b *testing.B) {
	ram, err := memory.New(64 << 20)
	require.NoError(b, err)
	defer ram.Close()
	ram.Reach(ram.Size())
	fr := NewFrames(ram, nil)
	const stack = 8 << 20
	for _, lazy := range []bool{false, true} {
		b.Run(map[bool]string{false: "eager", true: "lazy"}[lazy], func(b *testing.B) {
			for b.Loop() {
				as, err := New(fr)
				require.NoError(b, err)
				mapStack := as.Map
				if lazy {
					mapStack = as.MapLazy
				}
				require.NoError(b, mapStack(MaxUserAddr-stack, MaxUserAddr, rw))
				require.NoError(b, as.Write(MaxUserAddr-4*page, make([]byte, 4*page)))
				c, _, err := as.Clone()
				require.NoError(b, err)
				c.Release()
				as.Release()
				fr.Ran() // as the guest would have: what it retired is settled
				fr.Forgotten()
			}
		})
	}
}
