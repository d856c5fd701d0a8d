package linux

import (
	"debug/elf"
	"math/rand/v2"
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

// textOf is the .text section of the ELF file at path and its address.
func textOf(t testing.TB, path string) ([]byte, uint64) {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	text := f.Section(".text")
	require.NotNil(t, text, path)
	code, err := text.Data()
	require.NoError(t, err)
	return code, text.Addr
}

// wholeSweep is the sweep sweepTSC stands for: every byte of code decoded
// from its start, a byte stepped over where decoding fails.
func wholeSweep(code []byte, start uint64) []tscSite {
	return decodeTSC(code, start, [2]uint64{start, start + uint64(len(code))}, false, nil)
}

// sweepTSC, which decodes only near an opcode's bytes, finds what a sweep
// of the whole code finds: on real executables without symbols (busybox,
// libc, python: hundreds of candidate bytes, a few real sites) and on
// random bytes strewn with opcodes, where sweeps started apart take long
// to meet.
func TestSweepTSCIsTheWholeSweep(t *testing.T) {
	for _, path := range []string{"/bin/busybox", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3"} {
		code, start := textOf(t, path)
		require.NotEmpty(t, opcodeBytes(code), path)
		require.Equal(t, wholeSweep(code, start), sweepTSC(code, start), path)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		code := make([]byte, 64+r.IntN(8192))
		for i := range code {
			code[i] = byte(r.Uint32())
		}
		for range r.IntN(40) {
			op := [][]byte{{0x0F, 0x31}, {0x0F, 0x01, 0xF9}, {0x48, 0x0F, 0x31}}[r.IntN(3)]
			copy(code[r.IntN(len(code)):], op)
		}
		require.Equal(t, wholeSweep(code, 0x1000), sweepTSC(code, 0x1000))
	}
}

// FuzzSweepTSC: on any bytes, sweepTSC finds what the whole sweep finds.
func FuzzSweepTSC(f *testing.F) {
	f.Add([]byte{0xB8, 0x0F, 0x31, 0x00, 0x00, 0x0F, 0x31, 0xC3})
	f.Fuzz(func(t *testing.T, code []byte) {
		require.Equal(t, wholeSweep(code, 0x1000), sweepTSC(code, 0x1000))
	})
}

// BenchmarkSweepTSC: libc's .text (no symbols) swept whole and by
// sweepTSC, side by side.
func BenchmarkSweepTSC(b *testing.B) {
	code, start := textOf(b, "/usr/lib/x86_64-linux-gnu/libc.so.6")
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			wholeSweep(code, start)
		}
	})
	b.Run("near-opcodes", func(b *testing.B) {
		for b.Loop() {
			sweepTSC(code, start)
		}
	})
}

// A .text is scanned from the file's bytes only where one segment alone
// loaded it: one segment that holds it in its file part gives those
// bytes; a second reaching into it (a hostile file), or .text running past
// the file part (into zeros), leaves it to be read from memory.
func TestLoadedFrom(t *testing.T) {
	raw := make([]byte, 0x3000)
	for i := range raw {
		raw[i] = byte(i)
	}
	text := &elf.Section{SectionHeader: elf.SectionHeader{Addr: 0x401100, Size: 0x200}}
	code := &elf.Prog{ProgHeader: elf.ProgHeader{Vaddr: 0x401000, Off: 0x1000, Filesz: 0x1000, Memsz: 0x1000}}
	data := &elf.Prog{ProgHeader: elf.ProgHeader{Vaddr: 0x403000, Off: 0x2000, Filesz: 0x800, Memsz: 0x1000}}
	require.Equal(t, raw[0x1100:0x1300], loadedFrom([]*elf.Prog{code, data}, raw, text))

	overlap := &elf.Prog{ProgHeader: elf.ProgHeader{Vaddr: 0x401200, Off: 0x2000, Filesz: 0x100, Memsz: 0x100}}
	require.Nil(t, loadedFrom([]*elf.Prog{code, overlap}, raw, text))

	short := &elf.Prog{ProgHeader: elf.ProgHeader{Vaddr: 0x401000, Off: 0x1000, Filesz: 0x180, Memsz: 0x1000}}
	require.Nil(t, loadedFrom([]*elf.Prog{short}, raw, text))
	require.Nil(t, loadedFrom([]*elf.Prog{data}, raw, text), "no segment loads it")
}
