package debugger

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/kvm"
)

// The memory an instruction touches is worked out from its operands and
// the registers it runs with: RIP-relative and FS-relative operands,
// base + index × scale + displacement, stores that do not read, the
// stack's implicit slots, a string instruction's elements, and LEA and
// NOP, which touch nothing.
func TestAccesses(t *testing.T) {
	regs := &kvm.Regs{RIP: 0x401000, RSP: 0x7ff0, RBP: 0x8000, RBX: 0x5000, RCX: 3, RSI: 0x6000, RDI: 0x7000}
	const fs = 0x9000
	for _, c := range []struct {
		name string
		code []byte
		want []access
	}{
		{"mov eax, [rip+0x10]", []byte{0x8b, 0x05, 0x10, 0, 0, 0}, []access{{0x401000 + 6 + 0x10, 4, true}}},
		{"mov [rbp-8], rax", []byte{0x48, 0x89, 0x45, 0xf8}, []access{{0x8000 - 8, 8, false}}},
		{"add [rbx+rcx*4+8], eax", []byte{0x01, 0x44, 0x8b, 0x08}, []access{{0x5000 + 12 + 8, 4, true}}},
		{"cmp dword [rdi], 0", []byte{0x83, 0x3f, 0x00}, []access{{0x7000, 4, true}}},
		{"mov rax, fs:[0x28]", []byte{0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}, []access{{fs + 0x28, 8, true}}},
		{"lea rax, [rbx+8]", []byte{0x48, 0x8d, 0x43, 0x08}, nil},
		{"nop word [rax+rax]", []byte{0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}, nil},
		{"push rbx", []byte{0x53}, []access{{0x7ff0 - 8, 8, false}}},
		{"ret", []byte{0xc3}, []access{{0x7ff0, 8, true}}},
		{"rep movsb", []byte{0xf3, 0xa4}, []access{{0x7000, 1, false}, {0x6000, 1, true}}},
		{"lodsq", []byte{0x48, 0xad}, []access{{0x6000, 8, true}}},
		{"repne scasb", []byte{0xf2, 0xae}, []access{{0x7000, 1, true}}},
		{"not an instruction", []byte{0x0f, 0xff}, nil},
	} {
		require.Equal(t, c.want, accesses(c.code, regs, fs), c.name)
	}
	a := access{addr: 0x100, size: 4}
	require.True(t, a.touches(0x103, 1))
	require.True(t, a.touches(0xfc, 5))
	require.False(t, a.touches(0x104, 8))
	require.False(t, a.touches(0xf8, 8))
}
