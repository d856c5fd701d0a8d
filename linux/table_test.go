package linux

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSyscallTable checks the table against Linux's numbering: each entry
// names the call Linux gives its number, and takes no more arguments than
// a system call has.
func TestSyscallTable(t *testing.T) {
	require.Greater(t, len(syscalls), 100)
	for nr, sc := range syscalls {
		require.Equal(t, syscallNames[nr], sc.name, "system call %d", nr)
		require.True(t, sc.nargs >= 0 && sc.nargs <= len(args{}), "%s takes %d arguments", sc.name, sc.nargs)
	}
	require.Equal(t, "io_uring_setup", unknownName(425))
	require.Equal(t, "syscall 1000", unknownName(1000))
}
