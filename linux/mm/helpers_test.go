package mm

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/vmm/memory"
)

// newRAM is guest RAM of size bytes: an anonymous mapping, no KVM.
func newRAM(t *testing.T, size uint64) *memory.RAM {
	t.Helper()
	ram, err := memory.New(size)
	require.NoError(t, err)
	t.Cleanup(func() { ram.Close() })
	return ram
}

// newSpace is an address space over 4 MiB of RAM (512 frames), with no
// shadows to forget.
func newSpace(t *testing.T) (*Space, *Frames) {
	t.Helper()
	fr := NewFrames(newRAM(t, 4<<20), nil)
	as, err := New(fr)
	require.NoError(t, err)
	return as, fr
}

// user is a user address for the tests' mappings, 2 MiB-aligned.
const user = 0x40000000

const page uint64 = PageSize
