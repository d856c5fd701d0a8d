package replayer

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A timed sample of a Linux program is the system's when it finds the
// program on a SYSCALL or at most two instructions past one (glibc's
// read: syscall; cmp rax,-4096; ja; ret), and the program's further on
// or where no SYSCALL leads to it.
func TestNearSyscall(t *testing.T) {
	read := []byte{0x31, 0xc0, 0x0f, 0x05, 0x48, 0x3d, 0x00, 0xf0, 0xff, 0xff, 0x77, 0x5b, 0xc3, 0x90}
	// at returns what the sampler reads at offset i of read: the bytes
	// before it (padded in front with nops) and two of its own.
	at := func(code []byte, i int) []byte {
		b := make([]byte, syscallSkid*15+4)
		for j := range b {
			b[j] = 0x90
		}
		copy(b[len(b)-2-i:], code[:i+2])
		return b
	}
	for _, c := range []struct {
		off  int
		want bool
		what string
	}{
		{0, false, "xor before the call"},
		{2, true, "on the SYSCALL: blocked in it, or entering it"},
		{4, true, "right after it"},
		{10, true, "one instruction after (cmp)"},
		{12, true, "two instructions after (cmp; ja)"},
	} {
		require.Equal(t, c.want, nearSyscall(at(read, c.off)), c.what)
	}
	noCall := append([]byte{0x31, 0xc0, 0x90, 0x90}, read[4:]...)
	require.False(t, nearSyscall(at(noCall, 12)), "cmp; ja with no SYSCALL before them")
	later := append(append([]byte{0x0f, 0x05}, make([]byte, 6)...), 0x90, 0x90) // syscall; 3 × add [rax],al
	require.False(t, nearSyscall(at(later, 8)), "three instructions after the call: the program's own time")
}
