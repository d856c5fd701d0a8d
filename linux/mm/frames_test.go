package mm

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func alloc(t *testing.T, f *Frames) uint64 {
	t.Helper()
	pa, err := f.alloc()
	require.NoError(t, err)
	return pa
}

// Frames come from the bottom of the free RAM up, and the last freed is
// the first reused, zeroed.
func TestFramesReuseLastFreedFirst(t *testing.T) {
	f := NewFrames(newRAM(t, 4<<20), nil)
	a, b, c := alloc(t, f), alloc(t, f), alloc(t, f)
	require.Equal(t, []uint64{FirstFree, FirstFree + page, FirstFree + 2*page}, []uint64{a, b, c})
	require.NoError(t, f.ram.PutUint64(a, 0xdead))
	f.release(a)
	f.release(c)
	require.Equal(t, c, alloc(t, f), "the last freed first")
	require.Equal(t, a, alloc(t, f))
	v, err := f.ram.Uint64(a)
	require.NoError(t, err)
	require.Zero(t, v, "a reused frame is zeroed")
	require.Equal(t, FirstFree+3*page, alloc(t, f), "then a frame never used")
	require.Equal(t, 4*page, f.InUse())
}

// A retired table frame is not handed out again until KVM has forgotten
// its shadows, and only those retired before the guest last ran are
// freed then.
func TestRetiredFramesWaitForForgetting(t *testing.T) {
	forgets := 0
	f := NewFrames(newRAM(t, 4<<20), func() error { forgets++; return nil })
	a, b := alloc(t, f), alloc(t, f)
	f.retire(a)
	require.Equal(t, FirstFree+2*page, alloc(t, f), "not the retired frame")
	f.Ran()
	f.retire(b) // after the guest last ran: may still be walked
	f.Forgotten()
	require.Equal(t, a, alloc(t, f), "settled before the drop: free after it")
	require.NotEqual(t, b, alloc(t, f), "retired since the guest ran: still retired")
	require.Equal(t, []uint64{b}, f.retired)
	require.Zero(t, forgets)
}

// Out of frames, the allocator first has KVM forget its shadows to free
// the settled retired frames, then reports ErrNoMemory.
func TestFramesRunOut(t *testing.T) {
	forgets := 0
	f := NewFrames(newRAM(t, 4<<20), func() error { forgets++; return nil })
	total := f.available()
	require.Equal(t, uint64(512), total)
	var last uint64
	for range total {
		last = alloc(t, f)
	}
	f.retire(last)
	f.Ran()
	require.Equal(t, uint64(1), f.available(), "a settled retired frame counts")
	require.Equal(t, last, alloc(t, f), "reclaimed by forgetting")
	require.Equal(t, 1, forgets)
	_, err := f.alloc()
	require.True(t, errors.Is(err, ErrNoMemory), "got %v", err)
}

// A frame a fork shares is freed only with its last holder.
func TestSharedFrameFreedWithLastHolder(t *testing.T) {
	f := NewFrames(newRAM(t, 4<<20), nil)
	pa := alloc(t, f)
	f.share(pa)
	f.share(pa)
	require.Equal(t, 3, f.holders(pa))
	f.drop(pa)
	f.drop(pa)
	require.Equal(t, 1, f.holders(pa))
	require.Empty(t, f.free)
	f.drop(pa)
	require.Equal(t, []uint64{pa}, f.free)
}

// An int3 keeps the byte it replaced; it goes back when unpatched, when
// the originals are shown, and when the frame is freed; a copy of the
// frame keeps the bookkeeping.
func TestPatchedBytes(t *testing.T) {
	f := NewFrames(newRAM(t, 4<<20), nil)
	pa := alloc(t, f)
	at := pa + 0x123
	require.NoError(t, f.ram.Write(at, []byte{0x90}))
	require.NoError(t, f.Patch(at, false))
	require.NoError(t, f.Patch(at, true)) // a site now too
	got := func(pa uint64) byte {
		b, err := f.ram.Slice(pa, 1)
		require.NoError(t, err)
		return b[0]
	}
	require.Equal(t, byte(Int3), got(at))
	patched, site := f.PatchedAt(at)
	require.True(t, patched && site)
	require.NoError(t, f.ShowOriginals())
	require.Equal(t, byte(0x90), got(at))
	require.NoError(t, f.ShowPatches())
	require.Equal(t, byte(Int3), got(at))

	cp := alloc(t, f)
	f.copied(pa, cp)
	patched, _ = f.PatchedAt(cp + 0x123)
	require.True(t, patched, "a copy keeps the int3's bookkeeping")

	require.NoError(t, f.Unpatch(at))
	require.Equal(t, byte(0x90), got(at))
	f.release(cp)
	require.False(t, f.Patched(), "a freed frame's int3s are gone")
}
