package linux

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stretchr/testify/require"
)

// TestSyscallTable checks the table against Linux's numbering: each entry
// names the call Linux gives its number, and takes no more arguments than
// a system call has.
func TestSyscallTable(t *testing.T) {
	served := 0
	for i, sc := range syscalls {
		if sc.name == "" {
			require.Nil(t, sc.fn, "system call %d has a handler and no name", i)
			continue
		}
		served++
		nr := uint64(i)
		require.Equal(t, syscallNames[nr], sc.name, "system call %d", nr)
		require.True(t, sc.nargs >= 0 && sc.nargs <= len(args{}), "%s takes %d arguments", sc.name, sc.nargs)
		got, ok := lookup(nr)
		require.True(t, ok)
		require.Equal(t, sc.name, got.name)
		require.Equal(t, sc.name, callName(nr))
	}
	require.Greater(t, served, 100)
	for nr, name := range syscallNames {
		require.Less(t, nr, uint64(tableSize), "%s: Linux's numbers fit the table, so a name past it is \"syscall N\"", name)
	}
	for _, nr := range []uint64{tableSize, tableSize + 1, 1 << 63, ^uint64(0)} {
		_, ok := lookup(nr)
		require.False(t, ok, "number %d is past the table", nr)
	}
	require.Equal(t, "mbind", callName(unix.SYS_MBIND), "a number the table lacks is named as Linux names it")
	require.Equal(t, "io_uring_setup", unknownName(425))
	require.Equal(t, "syscall 1000", unknownName(1000))
}
