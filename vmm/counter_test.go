package vmm

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// countingAsm counts n times with the register counter's two instructions,
// in a loop as counted code does, then exits with status 7.
func countingAsm(n int, extra string) string {
	return fmt.Sprintf(`
.globl _start, __reprise_swbc_r15
__reprise_swbc_r15:
_start:
	mov $%d, %%ecx
1:	lea -1(%%r15), %%r15
	movzbl (%%r15), %%r14d
	%s
	dec %%ecx
	jnz 1b
	mov $7, %%eax
	mov $0x501, %%dx
	out %%eax, %%dx
`, n, extra)
}

// The register counter exits exactly at the target the VMM wrote, at every
// distance, counts on past it, and loads zero at every count.
func TestRegisterCounterExitsAtTarget(t *testing.T) {
	for _, tc := range []struct {
		target uint64
		exits  uint64
	}{{1, 1}, {4095, 1}, {4096, 1}, {70000, 1}, {100000, 1}, {100001, 0}, {NoBranchTarget, 0}} {
		m := asmMachine(t, countingAsm(100000, "add %r14, %rbx"), Config{TimerHz: -1})
		require.Equal(t, CounterRegister, m.BranchCounter())
		require.NoError(t, m.SetBranchTarget(tc.target))
		res, err := runMachine(t, m)
		require.NoError(t, err, "target %d", tc.target)
		require.Equal(t, uint32(7), res.Status)
		require.Equal(t, tc.exits, res.Stats.SWBCExits, "target %d", tc.target)
		count, err := m.BranchCount()
		require.NoError(t, err)
		require.Equal(t, uint64(100000), count, "target %d", tc.target)
		require.Zero(t, m.Regs().RBX, "a count loaded something but zero")
	}
}

// r15 belongs to the counter: a guest that moves it fails its run with a
// report saying so, rather than placing events at wrong counts.
func TestRegisterCounterRefusesAMovedR15(t *testing.T) {
	m := asmMachine(t, countingAsm(10, "mov $5, %r15\n\tmov $0x5f0, %dx\n\tout %al, %dx"), Config{TimerHz: -1})
	_, err := runMachine(t, m)
	require.ErrorContains(t, err, "r15 is 0x5, outside the branch counter's region")
}

// Code not built for the counter that saves r15, runs counted code (a
// callback) and restores r15 moves the count back: where an exit sees it
// (one did inside the callback), the run stops and says so rather than
// recording positions that repeat. Where none does, the replay's checks
// catch the positions that went astray.
func TestRegisterCounterRefusesACountGoingBack(t *testing.T) {
	m := asmMachine(t, countingAsm(10, `push %r15
	lea -1(%r15), %r15
	movzbl (%r15), %r14d
	mov $0x5f0, %dx
	out %al, %dx
	pop %r15
	out %al, %dx`), Config{TimerHz: -1})
	_, err := runMachine(t, m)
	require.ErrorContains(t, err, "the branch count went back from 2 to 1")
}
