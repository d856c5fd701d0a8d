package elffile_test

import (
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/internal/kvmtest"
)

const source = `
int counter;
__attribute__((noinline)) static int helper(int x) { return x * 3; }
int __twice(int x) { return helper(x) + helper(x); }
__attribute__((weak, alias("__twice"))) int twice(int x);
int main(int argc, char **argv) { (void)argv; counter += twice(argc); return counter; }
`

// build compiles source with flags and returns the executable.
func build(t *testing.T, flags ...string) string {
	t.Helper()
	kvmtest.RequireTools(t, "gcc", "objcopy", "strip")
	dir := t.TempDir()
	src := filepath.Join(dir, "prog.c")
	require.NoError(t, os.WriteFile(src, []byte(source), 0o644))
	out := filepath.Join(dir, "prog")
	b, err := exec.Command("gcc", append(flags, "-o", out, src)...).CombinedOutput()
	require.NoError(t, err, string(b))
	return out
}

func parse(t *testing.T, path string) *elffile.File {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	f, err := elffile.Parse(path, data)
	require.NoError(t, err)
	return f
}

// The name an address resolves to is the one a reader knows: of twice
// (weak) and __twice (global) at one address, twice.
func TestReadableNameWins(t *testing.T) {
	f := parse(t, build(t, "-O1", "-Wl,--build-id"))
	tw, ok := f.Symbols.Lookup("__twice")
	require.True(t, ok)
	require.Equal(t, "twice", f.Symbols.Function(tw.Addr))
	require.Len(t, f.BuildID, 40, "a SHA-1 build-id")
	require.False(t, f.Shared)
	require.NotZero(t, f.Span())
}

// A stripped executable's symbols come from its separate debug file,
// found by build-id under the debug root, as gdb and perf find them.
func TestSeparateDebugFileByBuildID(t *testing.T) {
	bin := build(t, "-O1", "-g", "-Wl,--build-id")
	full := parse(t, bin)
	root := t.TempDir()
	dbg := filepath.Join(root, ".build-id", full.BuildID[:2], full.BuildID[2:]+".debug")
	require.NoError(t, os.MkdirAll(filepath.Dir(dbg), 0o755))
	b, err := exec.Command("objcopy", "--only-keep-debug", bin, dbg).CombinedOutput()
	require.NoError(t, err, string(b))
	b, err = exec.Command("strip", "--strip-all", bin).CombinedOutput()
	require.NoError(t, err, string(b))

	stripped := parse(t, bin)
	_, ok := stripped.Symbols.Lookup("helper")
	require.False(t, ok, "a static function has no dynamic symbol")

	old := elffile.DebugRoot
	elffile.DebugRoot = root
	defer func() { elffile.DebugRoot = old }()
	withDebug := parse(t, bin)
	require.Equal(t, dbg, withDebug.DebugFile)
	h, ok := withDebug.Symbols.Lookup("helper")
	require.True(t, ok, "helper, from the debug file")
	want, _ := full.Symbols.Lookup("helper")
	require.Equal(t, want.Addr, h.Addr)
}

// Base finds where a file was loaded from an executable mapping of it,
// whatever page of its code the mapping starts at.
func TestBase(t *testing.T) {
	f := parse(t, build(t, "-O1", "-fPIE", "-pie"))
	seg, code, ok := f.ExecSegment(mustLookup(t, f, "main"))
	require.True(t, ok)
	require.NotEmpty(t, code)
	off, ok := f.Offset(seg)
	require.True(t, ok)
	const base = 0x555555554000
	// The executable segment mapped page-aligned at base + its address.
	got, ok := f.Base(base+seg&^0xfff, off&^0xfff)
	require.True(t, ok)
	require.Equal(t, uint64(base), got)
	_, ok = f.Base(base, 1<<40)
	require.False(t, ok, "an offset no segment holds")
}

func mustLookup(t *testing.T, f *elffile.File, name string) uint64 {
	t.Helper()
	s, ok := f.Symbols.Lookup(name)
	require.True(t, ok, name)
	return s.Addr
}

// A file is the program's, as untrusted as the program: whatever its
// bytes, Parse and an unwind through it return, without panicking.
func FuzzParseAndUnwind(f *testing.F) {
	seed, err := os.ReadFile("/bin/true")
	if err == nil {
		f.Add(seed)
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := elffile.Parse("fuzz", data)
		if err != nil {
			return
		}
		mem := func(addr uint64) (uint64, error) { return addr + 8, nil }
		locate := func(pc uint64) (*elffile.File, uint64, bool) { return o, 0, true }
		for _, s := range o.Symbols.All()[:min(len(o.Symbols.All()), 16)] {
			elffile.Unwind(elffile.Regs{RIP: s.Addr, RSP: 0x1000, RBP: 0x2000}, mem, locate, 8)
		}
		o.Base(0x1000, 0)
		o.Span()
	})
}

// A thousand corrupted copies of a real executable (a few bytes changed
// at random, from a fixed seed): each parses or is refused, and unwinds,
// without panicking.
func TestCorruptedFiles(t *testing.T) {
	seed, err := os.ReadFile("/bin/true")
	require.NoError(t, err)
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 1000; i++ {
		data := append([]byte(nil), seed...)
		for k := 0; k < 1+r.Intn(8); k++ {
			data[r.Intn(len(data))] = byte(r.Intn(256))
		}
		o, err := elffile.Parse("corrupt", data)
		if err != nil {
			continue
		}
		mem := func(addr uint64) (uint64, error) { return addr + 8, nil }
		locate := func(uint64) (*elffile.File, uint64, bool) { return o, 0, true }
		for _, s := range o.Symbols.All()[:min(len(o.Symbols.All()), 16)] {
			elffile.Unwind(elffile.Regs{RIP: s.Addr, RSP: 0x1000, RBP: 0x2000}, mem, locate, 8)
		}
	}
}
