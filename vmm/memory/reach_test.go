package memory_test

import (
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/vmm/memory"
)

// New populates nothing; the VMM's own accesses populate RAM up to the 2
// MiB that holds their end, Reach up to where it is asked, never down,
// and never beyond RAM. Data below the mark stays as written, whichever
// way the host populates.
func TestReachPopulatesOnlyWhatIsUsed(t *testing.T) {
	for _, touchOnly := range []bool{false, true} {
		ram := newRAM(t, 16*mib)
		if touchOnly {
			memory.TouchOnly(ram)
		}
		require.Zero(t, ram.Reached())
		require.Empty(t, ram.Populated())
		require.Equal(t, make([]bool, 8), resident(t, ram), "nothing resident after New")

		_, err := ram.Slice(16*mib, 0)
		require.NoError(t, err)
		require.Zero(t, ram.Reached(), "an empty slice reaches nothing")

		require.NoError(t, ram.Write(3*mib, []byte{7}))
		require.Equal(t, uint64(4*mib), ram.Reached())
		require.Len(t, ram.Populated(), 4*mib)
		require.Equal(t, []bool{true, true, false, false, false, false, false, false}, resident(t, ram))

		ram.Reach(mib)
		require.Equal(t, uint64(4*mib), ram.Reached(), "Reach never lowers the mark")
		ram.Reach(4*mib + 1)
		require.Equal(t, uint64(6*mib), ram.Reached())
		require.Equal(t, []bool{true, true, true, false, false, false, false, false}, resident(t, ram))
		ram.Reach(1 << 40)
		require.Equal(t, uint64(16*mib), ram.Reached(), "at most RAM's size")

		got := make([]byte, 1)
		require.NoError(t, ram.Read(3*mib, got))
		require.Equal(t, []byte{7}, got, "populating above the mark leaves RAM below it as written")
	}
}

// hashOf hashes ram as how says.
func hashOf(ram *memory.RAM, how memory.Hashing) [32]byte {
	h := sha256.New()
	ram.Hash(h, how)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// pagesHash is HashPages written out from a copy of all of RAM: the
// nonzero pages with their addresses, then the size.
func pagesHash(whole []byte) [32]byte {
	h := sha256.New()
	zero := make([]byte, 4096)
	for off := 0; off < len(whole); off += 4096 {
		if string(whole[off:off+4096]) != string(zero) {
			h.Write(binary.LittleEndian.AppendUint64(nil, uint64(off)))
			h.Write(whole[off : off+4096])
		}
	}
	h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(whole))))
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// A hash of RAM is of its contents only: the same whatever is populated,
// HashBytes the SHA-256 of every byte (as tapes before format version 9
// have it), HashPages that of the nonzero pages with their addresses and
// the size; moving a page, or growing RAM, changes it.
func TestHashIsOfContentsOnly(t *testing.T) {
	const size = 8 * mib
	lazy, full := newRAM(t, size), newRAM(t, size)
	full.Reach(size)
	for _, ram := range []*memory.RAM{lazy, full} {
		require.NoError(t, ram.Write(0x1000, []byte("first page")))
		require.NoError(t, ram.Write(2*mib+0x3ff8, []byte("crosses a page")))
		require.NoError(t, ram.Write(3*mib, make([]byte, 4096))) // zeros written: populated, still zero
	}
	require.Equal(t, uint64(4*mib), lazy.Reached())

	whole := make([]byte, size)
	copy(whole, full.Mapping())
	require.Equal(t, sha256.Sum256(whole), hashOf(lazy, memory.HashBytes))
	require.Equal(t, sha256.Sum256(whole), hashOf(full, memory.HashBytes))
	require.Equal(t, pagesHash(whole), hashOf(lazy, memory.HashPages))
	require.Equal(t, pagesHash(whole), hashOf(full, memory.HashPages))
	require.NotEqual(t, hashOf(lazy, memory.HashBytes), hashOf(lazy, memory.HashPages))

	moved := newRAM(t, size)
	require.NoError(t, moved.Write(0x2000, []byte("first page")))
	require.NoError(t, moved.Write(2*mib+0x3ff8, []byte("crosses a page")))
	require.NotEqual(t, hashOf(lazy, memory.HashPages), hashOf(moved, memory.HashPages), "a page's address is hashed")

	larger := newRAM(t, 2*size)
	require.NoError(t, larger.Write(0x1000, []byte("first page")))
	require.NoError(t, larger.Write(2*mib+0x3ff8, []byte("crosses a page")))
	require.NotEqual(t, hashOf(lazy, memory.HashPages), hashOf(larger, memory.HashPages), "RAM's size is hashed")
}

// BenchmarkRAMHash is an end's hash of 256 MiB of RAM of which a small
// program used 4 MiB, by HashPages and by HashBytes, side by side.
func BenchmarkRAMHash(b *testing.B) {
	for _, how := range []struct {
		name string
		how  memory.Hashing
	}{{"pages", memory.HashPages}, {"bytes", memory.HashBytes}} {
		b.Run(how.name, func(b *testing.B) {
			ram := newRAM(b, 256*mib)
			require.NoError(b, ram.Write(4*mib-1, []byte{1}))
			for b.Loop() {
				hashOf(ram, how.how)
			}
		})
	}
}
