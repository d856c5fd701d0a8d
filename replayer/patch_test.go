package replayer

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/vmm"
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

	// An exit patch: the site's instruction and those it displaces, each
	// relocated from its own place, then one jump back after the last.
	exit := func(orig ...[]byte) *patch {
		p := site(orig[0]...)
		p.how = probes.PatchExit
		for _, o := range orig[1:] {
			d, err := probes.DecodeBytes(p.end(), o)
			require.NoError(t, err)
			p.site.Displaced = append(p.site.Displaced, d)
		}
		return p
	}
	code, err = exit([]byte{0x55}, []byte{0x48, 0x89, 0xE5}).outOfLine()
	require.NoError(t, err)
	require.Equal(t, []byte{0x55, 0x48, 0x89, 0xE5, 0xE9}, code[:5])
	require.Equal(t, uint64(addr+4), relTarget(code, 9, tramp))
	// push; mov 0x100(%rip), %rax: the displacement is from the mov's own end.
	code, err = exit([]byte{0x55}, []byte{0x48, 0x8B, 0x05, 0x00, 0x01, 0x00, 0x00}).outOfLine()
	require.NoError(t, err)
	require.Equal(t, uint64(addr+8+0x100), relTarget(code, 8, tramp))
	require.Equal(t, uint64(addr+8), relTarget(code, 13, tramp))
	// push; jne: the branch, last, is rewritten as at an int3 site.
	code, err = exit([]byte{0x55}, []byte{0x75, 0x10}).outOfLine()
	require.NoError(t, err)
	require.Equal(t, []byte{0x55, 0x0F, 0x85}, code[:3])
	require.Equal(t, uint64(addr+3), relTarget(code, 12, tramp))
	require.Equal(t, uint64(addr+3+0x10), relTarget(code, 17, tramp))
	// A branch before the last could skip the rest.
	_, err = exit([]byte{0xC3}, []byte{0x55}).outOfLine()
	require.ErrorContains(t, err, "is not the last instruction its exit overwrites")
}

// A replay resumed from a checkpoint patches a guest whose threads have
// run: a site whose exit would overwrite an address a thread could resume
// at — the vCPU's RIP, or a saved RIP anywhere in RAM — keeps int3; one
// no thread is inside gets its exit. remove puts every byte back.
func TestThreadInsideKeepsInt3(t *testing.T) {
	kvmtest.Require(t)
	k, err := guest.Build(context.Background())
	require.NoError(t, err)
	img, err := elffile.OpenImage(k.HookImage()) // its mutex_lock starts with a 1-byte push
	require.NoError(t, err)
	specs, err := probes.ParseSpecs([]string{"mutex_lock", "mutex_unlock"})
	require.NoError(t, err)
	plan, err := probes.Resolve(specs, img)
	require.NoError(t, err)
	lock, unlock := plan.Sites[0], plan.Sites[1]
	require.Equal(t, probes.PatchExit, lock.Patch, lock.NoExit)
	require.Equal(t, probes.PatchExit, unlock.Patch, unlock.NoExit)
	require.NotEmpty(t, lock.Displaced, "mutex_lock's 1-byte push displaces the instruction after it")

	m, err := vmm.New(vmm.Config{Image: img, Cmdline: "syn_cont", MemBytes: 64 << 20})
	require.NoError(t, err)
	defer m.Close()
	ram := m.RAM()
	before := slices.Clone(ram.Mapping())
	saved := uint64(abi.UserBase - 8) // a word of the kernel's, as a preempted thread's saved RIP
	require.NoError(t, ram.PutUint64(saved, lock.Displaced[0].Addr))

	ps := &patches{sites: slices.Clone(plan.Sites), resumed: true}
	require.NoError(t, ps.install(m))
	got := ps.placement(img)
	require.Equal(t, probes.PatchInt3, got[0].Patch)
	require.Equal(t, "a thread stands inside the instructions its exit would overwrite", got[0].Why)
	require.Equal(t, probes.PatchExit, got[1].Patch, got[1].Why)
	code, err := ram.Slice(lock.Addr, 1)
	require.NoError(t, err)
	require.Equal(t, []byte{0xCC}, code)
	code, err = ram.Slice(unlock.Addr, probes.ExitPatchLen)
	require.NoError(t, err)
	require.Equal(t, []byte{0xE6, abi.PortProbe}, code)

	require.NoError(t, ram.PutUint64(saved, 0))
	require.NoError(t, ps.remove(ram))
	require.True(t, bytes.Equal(before, ram.Mapping()), "remove left bytes changed")
}
