package linux

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/abi"
)

// The exception-less stub, decoded as the CPU will run it at stubPage:
// every memory operand is a field of the call page, every branch lands on
// one of its own instructions, and its one way out to the VMM is the
// ordinary stub's OUT to abi.PortSyscall, at its end.
func TestFastCallStubReadsAndWritesTheCallPage(t *testing.T) {
	fields := map[uint64]string{cpState: "state", cpNR: "nr", cpRIP: "rip", cpFlags: "flags", cpRet: "ret", cpSavedRSP: "saved rsp", cpStackTop: "stack top"}
	for i := uint64(0); i < 7; i++ {
		fields[cpArgs+8*i%48] = "argument"
		fields[cpRegs+8*i] = "register"
	}
	starts := map[uint64]bool{}
	var branches []uint64
	var last x86asm.Inst
	used := map[string]bool{}
	for off := 0; off < len(fastSyscallStub); {
		inst, err := x86asm.Decode(fastSyscallStub[off:], 64)
		require.NoError(t, err, "at %#x", off)
		pc := stubPage + uint64(off)
		starts[pc] = true
		next := pc + uint64(inst.Len)
		for _, a := range inst.Args {
			switch a := a.(type) {
			case x86asm.Mem:
				require.Equal(t, x86asm.RIP, a.Base, "%v at %#x: only RIP-relative memory", inst, off)
				target := uint64(int64(next) + a.Disp)
				name, ok := fields[target]
				require.True(t, ok, "%v at %#x touches %#x, no field of the call page", inst, off, target)
				used[name] = true
			case x86asm.Rel:
				branches = append(branches, uint64(int64(next)+int64(a)))
			}
		}
		if inst.Op == x86asm.MOV && inst.Args[0] == x86asm.ECX {
			require.Equal(t, x86asm.Imm(spinBudget), inst.Args[1], "the spin's budget")
		}
		off += inst.Len
		last = inst
	}
	for _, b := range branches {
		require.True(t, starts[b], "a branch to %#x, inside an instruction or outside the stub", b)
	}
	require.Equal(t, x86asm.OUT, last.Op)
	require.Equal(t, x86asm.Imm(abi.PortSyscall), last.Args[0], "the stub's exit is the syscall port's")
	for _, name := range []string{"state", "nr", "argument", "rip", "flags", "ret", "saved rsp", "stack top", "register"} {
		require.True(t, used[name], "the stub never touches the call page's %s", name)
	}
	require.LessOrEqual(t, uint64(len(fastSyscallStub)), uint64(pageSize))
}
