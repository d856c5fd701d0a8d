package memory_test

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/vmm/memory"
)

// resident says, per 2 MiB of ram's mapping, whether any page of it is in
// host memory (mincore).
func resident(t *testing.T, ram *memory.RAM) []bool {
	t.Helper()
	b := ram.Mapping()
	vec := make([]byte, len(b)/4096)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	require.Zero(t, errno, "mincore")
	chunks := make([]bool, len(b)/(2*mib))
	for i, v := range vec {
		if v&1 != 0 {
			chunks[i*4096/(2*mib)] = true
		}
	}
	return chunks
}
