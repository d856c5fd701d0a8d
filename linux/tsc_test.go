package linux

import (
	"debug/elf"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/cprog"
)

// findTSC finds an RDTSC and an RDTSCP where they are instructions, not
// where their bytes are inside another's immediate, with and without
// function symbols.
func TestFindTSC(t *testing.T) {
	code := []byte{
		0xB8, 0x0F, 0x31, 0x00, 0x00, // mov eax, 0x310f: an RDTSC's bytes in an immediate
		0x0F, 0x31, // rdtsc
		0xC3,             // ret
		0x0F, 0x01, 0xF9, // rdtscp
		0xC3, // ret
		0x90, // nop
	}
	const start = 0x401000
	want := []tscSite{{offset: 5, len: 2}, {offset: 8, len: 3}}
	require.Equal(t, want, findTSC(code, start, []uint64{start, start + 8, start + 12}))
	require.Equal(t, want, findTSC(code, start, nil))
}

// On a real executable (a Go program, with its symbols: the runtime reads
// the TSC), the functions findTSC decodes, those holding an opcode's
// bytes, give the sites that decoding every function gives.
func TestFindTSCDecodesOnlyCandidates(t *testing.T) {
	f, err := elf.Open(cprog.BuildGo(t, "gotimers"))
	require.NoError(t, err)
	defer f.Close()
	text := f.Section(".text")
	require.NotNil(t, text)
	code, err := text.Data()
	require.NoError(t, err)
	funcs := functions(f, text, 0)
	require.NotEmpty(t, funcs)

	var every []tscSite
	for i, fn := range funcs {
		next := text.Addr + uint64(len(code))
		if i+1 < len(funcs) {
			next = funcs[i+1]
		}
		every = decodeTSC(code, text.Addr, [2]uint64{fn, next}, true, every)
	}
	require.NotEmpty(t, every, "the Go runtime reads the TSC")
	require.Equal(t, every, findTSC(code, text.Addr, funcs))
}
