package replayer

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/kvm"
)

// A software step waits where the instruction can go: past it, a
// conditional branch's target too, a jump's or call's target (through a
// register or memory: read from the thread's registers and memory), a
// ret's return address; past a ud2, the kit's system call.
func TestSuccessors(t *testing.T) {
	const at = 0x401000
	regs := &kvm.Regs{RAX: 0x402000, RBX: 0x10, RSP: 0x7000}
	mem := map[uint64]uint64{0x7000: 0x403000, 0x401006 + 0x20: 0x404000, 0x500000 + 0x10*8: 0x405000}
	read := func(va uint64, p []byte) error {
		v, ok := mem[va]
		if !ok {
			return errors.New("unmapped")
		}
		binary.LittleEndian.PutUint64(p, v)
		return nil
	}
	for _, c := range []struct {
		name string
		code []byte
		want []uint64
	}{
		{"mov", []byte{0x48, 0x89, 0xd8}, []uint64{at + 3}},
		{"jne rel8", []byte{0x75, 0x10}, []uint64{at + 2, at + 0x12}},
		{"jne to the next", []byte{0x75, 0x00}, []uint64{at + 2}},
		{"jmp rel32", []byte{0xe9, 0x00, 0x01, 0x00, 0x00}, []uint64{at + 5 + 0x100}},
		{"call rel32", []byte{0xe8, 0xfb, 0xff, 0xff, 0xff}, []uint64{at}},
		{"call *%rax", []byte{0xff, 0xd0}, []uint64{0x402000}},
		{"jmp *0x20(%rip)", []byte{0xff, 0x25, 0x20, 0x00, 0x00, 0x00}, []uint64{0x404000}},
		{"jmp *0x500000(,%rbx,8)", []byte{0xff, 0x24, 0xdd, 0x00, 0x00, 0x50, 0x00}, []uint64{0x405000}},
		{"ret", []byte{0xc3}, []uint64{0x403000}},
		{"loop", []byte{0xe2, 0xfe}, []uint64{at + 2, at}},
		{"ud2", []byte{0x0f, 0x0b}, []uint64{at + 2}},
	} {
		inst, err := x86asm.Decode(c.code, 64)
		require.NoError(t, err, c.name)
		got, err := successors(inst, at, regs, read)
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, got, c.name)
	}
	inst, err := x86asm.Decode([]byte{0xc3}, 64)
	require.NoError(t, err)
	_, err = successors(inst, at, &kvm.Regs{RSP: 0x9000}, read)
	require.ErrorContains(t, err, "return address", "a ret whose stack cannot be read")
}
