package linux

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
)

// A fault retried for a stale translation leaves its frame at the top of
// RSP0's stack; once the retried instruction has run (the program's next
// exit, a system call here) the frame the program's own traps left is
// back, as in a replay that never met the fault. Without that, a
// recording that met one and trapped no more ended with RAM its replay
// did not have.
func TestStaleRetryLeavesNoFrame(t *testing.T) {
	k := bootedKernel(t)
	ram := k.m.RAM()
	slots, err := ram.Slice(frameAt, uint64(len(programFrame{})))
	require.NoError(t, err)
	want := bytes.Clone(slots)
	c := k.m.VCPU()
	user := *c.SyncedRegs() // where the program resumes
	va := (user.RSP - 8) &^ pageMask
	pte, err := k.proc().as.Leaf(va)
	require.NoError(t, err)
	require.NotZero(t, pte&1, "the stack page is mapped")

	// A user write fault on the stack page, which its tables map
	// writable: the frame the CPU and the stub leave, and the stub's
	// registers.
	var stale [7 * 8]byte
	for i, v := range []uint64{14, pfPresent | pfWrite | pfUser, user.RIP, 0x33, user.RFLAGS, user.RSP, 0x2b} {
		binary.LittleEndian.PutUint64(stale[i*8:], v)
	}
	copy(slots, stale[:])
	regs := c.SyncedRegs()
	regs.RSP, regs.RIP = frameAt, vectorsPage+14*abi.VectorStubSize
	c.SyncedSregs().CR2 = va + 0x10
	require.True(t, k.HostTrap(abi.PortTrap), "the fault is the host's")
	require.NoError(t, k.Exit(abi.PortTrap))
	require.Equal(t, uint64(1), k.Stats().StaleTranslations)
	require.Equal(t, stale[:], slots, "the stub's frame, for its IRETQ")

	// The retried write runs, then the program calls getpid.
	*c.SyncedRegs() = user
	r := c.SyncedRegs()
	r.RAX, r.RCX, r.R11 = unix.SYS_GETPID, r.RIP, r.RFLAGS
	require.NoError(t, k.Exit(abi.PortSyscall))
	require.Equal(t, want, slots, "the program's own frame is back")
	require.Zero(t, k.stale, "the retry is over")
}
