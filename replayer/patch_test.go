package replayer

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/probes"
)

// relTarget decodes the target of a rel32 jump/jcc/call ending at code
// offset end, placed at tramp.
func relTarget(code []byte, end int, tramp uint64) uint64 {
	return tramp + uint64(end) + uint64(int64(int32(binary.LittleEndian.Uint32(code[end-4:end]))))
}

func TestOutOfLine(t *testing.T) {
	const addr, tramp = 0x402490, abi.ProbeArea + 64
	at := func(a uint64, orig ...byte) *patch {
		s, err := probes.DecodeBytes(a, orig)
		require.NoError(t, err)
		return &patch{site: &s, tramp: tramp}
	}
	site := func(orig ...byte) *patch { return at(addr, orig...) }

	// A plain instruction, then a jump back past it.
	code, err := site(0x55).outOfLine()
	require.NoError(t, err)
	require.Equal(t, byte(0x55), code[0])
	require.Equal(t, byte(0xE9), code[1])
	require.Equal(t, uint64(addr+1), relTarget(code, 6, tramp))

	// call rel32: push the in-place return address, jump to the target.
	code, err = site(0xE8, 0x10, 0, 0, 0).outOfLine()
	require.NoError(t, err)
	require.Equal(t, byte(0x68), code[0])
	require.Equal(t, uint32(addr+5), binary.LittleEndian.Uint32(code[1:5]))
	require.Equal(t, uint64(addr+5+0x10), relTarget(code, 10, tramp))

	// jmp rel8 (backwards).
	code, err = site(0xEB, 0xF0).outOfLine()
	require.NoError(t, err)
	require.Len(t, code, 5)
	require.Equal(t, uint64(addr+2-0x10), relTarget(code, 5, tramp))

	// jcc rel8: the condition kept, taken → target, not taken → back.
	code, err = site(0x74, 0x05).outOfLine()
	require.NoError(t, err)
	require.Equal(t, []byte{0x0F, 0x84}, code[:2])
	require.Equal(t, uint64(tramp+11), relTarget(code, 6, tramp))
	require.Equal(t, uint64(addr+2), relTarget(code, 11, tramp))
	require.Equal(t, uint64(addr+2+5), relTarget(code, 16, tramp))

	// jcc rel32 (0F 8x).
	code, err = site(0x0F, 0x85, 0x00, 0x01, 0, 0).outOfLine()
	require.NoError(t, err)
	require.Equal(t, []byte{0x0F, 0x85}, code[:2])
	require.Equal(t, uint64(addr+6+0x100), relTarget(code, 16, tramp))

	// A prefixed jcc (3e 74: the decoder says Jcc, the opcode is not first).
	code, err = site(0x3E, 0x74, 0x05).outOfLine()
	require.NoError(t, err)
	require.Equal(t, []byte{0x0F, 0x84}, code[:2])
	require.Equal(t, uint64(addr+3), relTarget(code, 11, tramp))
	require.Equal(t, uint64(addr+3+5), relTarget(code, 16, tramp))

	// loop rel8: the instruction skips the jump back when taken.
	code, err = site(0xE2, 0xF0).outOfLine()
	require.NoError(t, err)
	require.Equal(t, []byte{0xE2, 5}, code[:2])
	require.Equal(t, uint64(addr+2), relTarget(code, 7, tramp))
	require.Equal(t, uint64(addr+2-0x10), relTarget(code, 12, tramp))

	_, err = site(0xFF, 0xD0).outOfLine()
	require.ErrorContains(t, err, "indirect call")

	// RIP-relative: mov 0x100(%rip), %rax reads the same address from the copy.
	code, err = site(0x48, 0x8B, 0x05, 0x00, 0x01, 0x00, 0x00).outOfLine()
	require.NoError(t, err)
	require.Equal(t, uint64(addr+7+0x100), relTarget(code, 7, tramp))
	require.Equal(t, uint64(addr+7), relTarget(code, 12, tramp))

	// Out of rel32 reach of the probe area.
	_, err = at(0x1_0000_0000, 0x55).outOfLine()
	require.ErrorContains(t, err, "out of rel32 reach")
	// A displacement offset past the instruction (not what the decoder
	// gives, but a site is plain data).
	short := probes.Site{Addr: addr, Orig: []byte{0x48, 0x8B, 0x05}, Len: 3, RIPRelDispOff: 3}
	_, err = (&patch{site: &short, tramp: tramp}).outOfLine()
	require.ErrorContains(t, err, "outside the instruction")
}
