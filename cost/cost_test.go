package cost_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/cost"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// The test image: each case a function whose interval starts after its
// first count (COUNT, the register counter's two instructions, or a call
// to the hook). STEP is one step of the kit's shapes workload: a chain of
// 3 + 1 + 0 + 1 + 1 = 6 cycles through rax (imul, lea, a renamed mov,
// shr, xor).
const testCode = `
#define COUNT lea -1(%r15),%r15; movzbl (%r15),%r14d
#define STEP imul %rdi,%rax; lea (%rax,%rsi),%rcx; mov %rcx,%rax; shr $31,%rax; xor %rcx,%rax
.text
.globl _start
_start:	hlt

tight:	COUNT
	STEP
	sub $1,%edx
	jne tight
	ret

unrolled:	COUNT
	STEP; STEP; STEP; STEP
	ret

wide:	COUNT
	add $1,%r8; add $1,%r9; add $1,%r10; add $1,%r11
	add $1,%r12; add $1,%r13; add $1,%rbx; add $1,%rcx
	add $1,%r8; add $1,%r9; add $1,%r10; add $1,%r11
	add $1,%r12; add $1,%r13; add $1,%rbx; add $1,%rcx
	sub $1,%edx
	jne wide
	ret

forked:	COUNT
	test %edx,%edx
	je 1f
	STEP; STEP
1:	ret

calls:	COUNT
	STEP
	call tight
	STEP
	ret

uncounted:	COUNT
	call plain
	ret
plain:	STEP; STEP
	ret

stream:	COUNT
	add (%rdi,%rax,8),%rdx
	add $1,%rax
	cmp %rax,%rsi
	jne stream
	ret

inmemory:	COUNT
	addq $1,counter(%rip)
	sub $1,%ecx
	jne inmemory
	ret

chase:	COUNT
	mov (%rax),%rax
	sub $1,%ecx
	jne chase
	ret

spill:	COUNT
	STEP
	mov %rax,8(%rsp)
	mov 8(%rsp),%rax
	STEP
	ret

atomic:	COUNT
	lock incq (%rdi)
	ret

divide:	COUNT
	xor %edx,%edx
	div %rcx
	ret

.globl __sanitizer_cov_trace_pc
__sanitizer_cov_trace_pc:
	ret
hooked:	call __sanitizer_cov_trace_pc
	STEP
	sub $1,%edx
	jne hooked
	ret

.data
counter: .quad 0
`

func TestIntervals(t *testing.T) {
	kvmtest.RequireTools(t, "cc")
	img, err := elffile.OpenImage(kvmtest.AsmImage(t, testCode))
	require.NoError(t, err)
	at := func(name string, after uint64) uint64 {
		sym, ok := img.Lookup(name)
		require.True(t, ok, name)
		return sym.Addr + after
	}
	count := uint64(len(abi.CountCode))
	m := cost.New(img, at("__sanitizer_cov_trace_pc", 0))
	for _, tc := range []struct {
		name string
		want float64
		why  string
	}{
		{"tight", 6, "a loop's interval costs what one iteration adds to the next: the step's chain; the loop control runs beside it"},
		{"unrolled", 24, "four steps in a row: their chain"},
		{"wide", 18.0 / 6, "sixteen independent adds and the loop control: six instructions a cycle"},
		{"forked", (12 + 3.0/6) / 2, "both ways of a forward branch, one half each: two steps, or three instructions"},
		{"calls", 6, "up to the call: the callee counts at its entry"},
		{"uncounted", 12, "a callee that does not count belongs to the interval"},
		{"stream", 1, "loads a chain does not wait for, from addresses known early"},
		{"inmemory", 6, "a counter in memory: a load, an add and a store each iteration"},
		{"chase", 5, "each load waits for the one before"},
		{"spill", 17, "a value stored and loaded again: the store forwarded to the load"},
		{"atomic", 6 + 18, "a locked instruction drains the stores before it"},
		{"divide", 15, "a 64-bit division"},
	} {
		require.InDelta(t, tc.want, m.Interval(at(tc.name, count)).Cycles, 1e-9, "%s: %s", tc.name, tc.why)
	}
	require.Equal(t, cost.Estimate{Cycles: 6, Instructions: 7}, m.Interval(at("tight", count)), "the step, sub and jne")
	require.Equal(t, (13+3)/2.0, m.Interval(at("forked", count)).Instructions, "both ways, one half each")
	require.InDelta(t, 6, m.Interval(at("hooked", 5)).Cycles, 1e-9, "the trace-pc hook's call is a count: a loop back to it")
	require.Zero(t, m.Interval(0x100), "no code there")
}
