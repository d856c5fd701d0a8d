package elffile_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// testAsm has a sized function at the entry point, a second sized function
// followed by padding no symbol covers, an unsized label, and a data
// segment with an object and some bss.
const testAsm = `
	.text
	.globl _start
	.type _start, @function
_start:
	nop
	nop
	nop
	nop
	call helper
	hlt
	.size _start, .-_start

	.globl helper
	.type helper, @function
helper:
	nop
	nop
	ret
	.size helper, .-helper

	.skip 16, 0x90
label:
	nop
	nop
	ret

	.data
	.globl counter
	.type counter, @object
	.size counter, 8
counter:
	.quad 42

	.bss
	.balign 32
	.globl buf
	.type buf, @object
	.size buf, 64
buf:
	.skip 64
`

// Addresses fixed by testAsm and testLinkScript.
const (
	addrStart  = 0x200000 // _start: 4 nops, call (5), hlt: 10 bytes
	addrHelper = 0x20000a // helper: 3 bytes
	addrPad    = 0x20000d // 16 bytes of padding
	addrLabel  = 0x20001d
	addrData   = 0x300000 // counter: 8 bytes
	addrBuf    = 0x300020 // buf: 64 bytes of bss, 32-aligned
)

const testLinkScript = `ENTRY(_start)
SECTIONS {
	. = 0x200000;
	.text : { *(.text*) }
	. = 0x300000;
	.data : { *(.data*) }
	.bss : { *(.bss*) *(COMMON) }
	/DISCARD/ : { *(.note*) *(.comment) }
}
`

// buildELF assembles testAsm with cc and extra flags, linked with
// testLinkScript, skipping the test when there is no cc; it fails the test
// if cc exists but the build fails.
func buildELF(t testing.TB, flags ...string) (path string, raw []byte) {
	t.Helper()
	path, raw, err := tryBuildELF(t, true, flags...)
	require.NoError(t, err)
	return path, raw
}

// tryBuildELF is buildELF that returns build failures; script selects
// testLinkScript over the toolchain's default layout.
func tryBuildELF(t testing.TB, script bool, flags ...string) (string, []byte, error) {
	t.Helper()
	kvmtest.RequireTools(t, "cc")
	dir := t.TempDir()
	src := filepath.Join(dir, "img.S")
	ld := filepath.Join(dir, "img.ld")
	out := filepath.Join(dir, "img.elf")
	require.NoError(t, os.WriteFile(src, []byte(testAsm), 0o644))
	require.NoError(t, os.WriteFile(ld, []byte(testLinkScript), 0o644))
	args := []string{"-nostdlib", "-Wl,--build-id=none", "-Wl,--no-warn-rwx-segments", "-Wl,-z,noexecstack", "-o", out, src}
	if script {
		args = append(args, "-Wl,-T,"+ld)
	}
	args = append(args, flags...)
	if b, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
		return "", nil, &buildError{err: err, out: string(b)}
	}
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	return out, raw, nil
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "cc: " + e.err.Error() + "\n" + e.out }

func validImage(t testing.TB) (string, []byte) { return buildELF(t, "-static", "-no-pie") }

func TestParseValidImage(t *testing.T) {
	path, raw := validImage(t)
	img, err := elffile.OpenImage(path)
	require.NoError(t, err)
	require.Equal(t, path, img.Path)
	require.Equal(t, uint64(addrStart), img.Entry)
	require.Equal(t, sha256.Sum256(raw), img.SHA256)

	require.Len(t, img.Segments, 2)
	text, data := img.Segments[0], img.Segments[1]
	require.Equal(t, uint64(addrStart), text.Addr)
	require.True(t, text.Exec)
	require.False(t, text.Writable)
	require.Equal(t, []byte{0x90, 0x90, 0x90, 0x90, 0xe8}, text.Data[:5], "nops then call")
	require.Equal(t, uint64(len(text.Data)), text.MemSize)

	require.Equal(t, uint64(addrData), data.Addr)
	require.True(t, data.Writable)
	require.False(t, data.Exec)
	require.Equal(t, uint64(42), binary.LittleEndian.Uint64(data.Data))
	require.GreaterOrEqual(t, data.MemSize, uint64(len(data.Data))+64, "bss is memory-only")
	require.Equal(t, data.Addr+data.MemSize, data.End())

	lo, hi := img.Bounds()
	require.Equal(t, uint64(addrStart), lo)
	require.Equal(t, data.End(), hi)

	// Parse of the same bytes agrees with Open.
	img2, err := elffile.ParseImage("x", raw)
	require.NoError(t, err)
	require.Equal(t, img.Segments, img2.Segments)
	require.Equal(t, img.Symbols(), img2.Symbols())
}

func TestSymbols(t *testing.T) {
	_, raw := validImage(t)
	img, err := elffile.ParseImage("img", raw)
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		addr uint64
		size uint64
		fn   bool
	}{
		{"_start", addrStart, 10, true},
		{"helper", addrHelper, 3, true},
		{"label", addrLabel, 0, false},
		{"counter", addrData, 8, false},
		{"buf", addrBuf, 64, false},
	} {
		s, ok := img.Lookup(tc.name)
		require.True(t, ok, "symbol %s", tc.name)
		require.Equal(t, tc.name, s.Name)
		require.Equal(t, tc.addr, s.Addr, "%s address", tc.name)
		require.Equal(t, tc.size, s.Size, "%s size", tc.name)
		require.Equal(t, tc.fn, s.Func, "%s is a function", tc.name)
	}
	_, ok := img.Lookup("nonexistent")
	require.False(t, ok)

	syms := img.Symbols()
	for i := 1; i < len(syms); i++ {
		require.LessOrEqual(t, syms[i-1].Addr, syms[i].Addr, "Symbols sorted by address")
	}

	for _, tc := range []struct {
		addr uint64
		want string
	}{
		{addrStart - 1, "0x1fffff"}, // before the first symbol
		{0, "0x0"},
		{addrStart, "_start"},
		{addrStart + 3, "_start+0x3"},
		{addrHelper - 1, "_start+0x9"},
		{addrHelper, "helper"},
		{addrHelper + 2, "helper+0x2"},
		{addrPad, "0x20000d"}, // past helper's size, before label
		{addrLabel - 1, "0x20001c"},
		{addrLabel, "label"},
		{addrLabel + 2, "label+0x2"},
		{addrData + 7, "counter+0x7"},
		{addrData + 8, "0x300008"}, // past counter's size, before buf
		{addrBuf + 63, "buf+0x3f"},
		{addrBuf + 64, "0x300060"},
	} {
		require.Equal(t, tc.want, img.Describe(tc.addr), "Describe(%#x)", tc.addr)
		_, _, ok := img.Resolve(tc.addr)
		require.Equal(t, tc.want[0] != '0', ok, "Resolve(%#x) ok", tc.addr)
	}
	s, off, ok := img.Resolve(addrHelper + 1)
	require.True(t, ok)
	require.Equal(t, "helper", s.Name)
	require.Equal(t, uint64(1), off)
}

// Offsets into an ELF64 header and program header.
const (
	ehType   = 16
	ehMach   = 18
	ehEntry  = 24
	ehPhoff  = 32
	ehPhent  = 54
	ehPhnum  = 56
	phType   = 0
	phOff    = 8
	phPaddr  = 24
	phFilesz = 32
	phMemsz  = 40
	ptLoad   = 1
)

// progHeaders returns the file offsets of raw's program headers.
func progHeaders(raw []byte) []int {
	le := binary.LittleEndian
	off, ent, n := int(le.Uint64(raw[ehPhoff:])), int(le.Uint16(raw[ehPhent:])), int(le.Uint16(raw[ehPhnum:]))
	var hs []int
	for i := 0; i < n; i++ {
		hs = append(hs, off+i*ent)
	}
	return hs
}

// loadHeaders returns the file offsets of the PT_LOAD headers, in file order.
func loadHeaders(raw []byte) []int {
	var hs []int
	for _, h := range progHeaders(raw) {
		if binary.LittleEndian.Uint32(raw[h+phType:]) == ptLoad {
			hs = append(hs, h)
		}
	}
	return hs
}

func TestParseRejects(t *testing.T) {
	_, valid := validImage(t)
	require.Len(t, loadHeaders(valid), 2)
	le := binary.LittleEndian
	patched := func(f func(b []byte)) []byte {
		b := bytes.Clone(valid)
		f(b)
		return b
	}
	for _, tc := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"empty", nil, "not an ELF"},
		{"text", []byte("#!/bin/sh\necho hi\n"), "not an ELF"},
		{"magic only", []byte("\x7fELF"), "malformed ELF"},
		{"three bytes", valid[:3], "not an ELF"},
		{"truncated header", valid[:40], "malformed ELF"},
		{"truncated program headers", valid[:le.Uint64(valid[ehPhoff:])+10], "malformed ELF"},
		{"ET_DYN", patched(func(b []byte) { le.PutUint16(b[ehType:], 3) }), "ET_DYN"},
		{"ET_REL", patched(func(b []byte) { le.PutUint16(b[ehType:], 1) }), "ET_REL"},
		{"aarch64", patched(func(b []byte) { le.PutUint16(b[ehMach:], 183) }), "EM_AARCH64"},
		{"no PT_LOAD", patched(func(b []byte) {
			for _, h := range loadHeaders(valid) {
				le.PutUint32(b[h+phType:], 4) // PT_NOTE
			}
		}), "no loadable segments"},
		{"entry outside", patched(func(b []byte) { le.PutUint64(b[ehEntry:], 0x100) }), "entry point 0x100"},
		{"entry in padding between segments", patched(func(b []byte) { le.PutUint64(b[ehEntry:], 0x280000) }), "entry point"},
		{"filesz > memsz", patched(func(b []byte) {
			h := loadHeaders(valid)[0]
			le.PutUint64(b[h+phMemsz:], le.Uint64(b[h+phFilesz:])-1)
		}), "exceeds memory size"},
		{"overlapping segments", patched(func(b []byte) {
			le.PutUint64(b[loadHeaders(valid)[1]+phPaddr:], addrStart+4)
		}), "overlap"},
		{"address overflow", patched(func(b []byte) {
			le.PutUint64(b[loadHeaders(valid)[1]+phPaddr:], ^uint64(0)-3)
		}), "overflows"},
		{"segment past end of file", patched(func(b []byte) {
			le.PutUint64(b[loadHeaders(valid)[0]+phOff:], uint64(len(valid))-4)
		}), "segment 0"},
		{"elf32 by hand", elf32Header(), "ELFCLASS32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := elffile.ParseImage("bad.elf", tc.raw)
			require.Nil(t, img)
			var fe *elffile.FormatError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "bad.elf", fe.Path)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), "bad.elf")
		})
	}
}

// Every prefix of a valid image that cuts into it must be rejected (or, if
// the cut only removes bytes the parser never needs, still be valid): it
// must never panic.
func TestParseTruncated(t *testing.T) {
	_, valid := validImage(t)
	rejected := 0
	for n := 0; n < len(valid); n++ {
		img, err := elffile.ParseImage("t", valid[:n])
		if err != nil {
			rejected++
			require.Nil(t, img)
		}
	}
	require.Greater(t, rejected, len(valid)/2)
	_, err := elffile.ParseImage("t", valid[:len(valid)-1])
	require.Error(t, err, "the section headers are at the end; losing a byte breaks them")
}

// TestParseHugeFileSize is the regression test for a program header whose
// p_filesz is far larger than the file: Parse must reject it, not allocate
// p_filesz bytes (which panics or exhausts memory).
func TestParseHugeFileSize(t *testing.T) {
	_, valid := validImage(t)
	for _, size := range []uint64{1 << 50, 1 << 62} {
		raw := bytes.Clone(valid)
		h := loadHeaders(raw)[0]
		binary.LittleEndian.PutUint64(raw[h+phFilesz:], size)
		binary.LittleEndian.PutUint64(raw[h+phMemsz:], size)
		var err error
		require.NotPanics(t, func() { _, err = elffile.ParseImage("huge", raw) })
		require.Error(t, err)
	}
}

func TestParseRejectsRealBuilds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script bool
		flags  []string
		want   string
	}{
		{"32-bit", true, []string{"-m32", "-static", "-no-pie"}, "ELFCLASS32"},
		// With a fixed-address linker script ld emits ET_EXEC even for
		// -static-pie, so the PIE uses the default layout.
		{"static PIE", false, []string{"-static-pie"}, "ET_DYN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, raw, err := tryBuildELF(t, tc.script, tc.flags...)
			if err != nil {
				t.Skipf("toolchain cannot build this variant (the hand-made header case covers the check): %v", err)
			}
			_, err = elffile.ParseImage("v.elf", raw)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A PT_LOAD with p_filesz 0 (only bss) is valid: it has no bytes to read
// and is all zeros in memory.
func TestParseBSSOnlySegment(t *testing.T) {
	_, raw := validImage(t)
	raw = bytes.Clone(raw)
	h := loadHeaders(raw)[1]
	memsz := binary.LittleEndian.Uint64(raw[h+phMemsz:])
	binary.LittleEndian.PutUint64(raw[h+phFilesz:], 0)
	img, err := elffile.ParseImage("bss.elf", raw)
	require.NoError(t, err)
	require.Len(t, img.Segments, 2)
	require.Empty(t, img.Segments[1].Data)
	require.Equal(t, memsz, img.Segments[1].MemSize)
	require.Equal(t, uint64(addrData), img.Segments[1].Addr)
}

func TestOpenMissingFile(t *testing.T) {
	_, err := elffile.OpenImage(filepath.Join(t.TempDir(), "none.elf"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// elf32Header is a minimal, well-formed 32-bit i386 executable header with
// no program or section headers.
func elf32Header() []byte {
	b := make([]byte, 52)
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 1, 1, 1 // ELFCLASS32, little-endian, EV_CURRENT
	le := binary.LittleEndian
	le.PutUint16(b[16:], 2) // ET_EXEC
	le.PutUint16(b[18:], 3) // EM_386
	le.PutUint32(b[20:], 1)
	le.PutUint32(b[24:], 0x200000)
	le.PutUint16(b[40:], 52) // e_ehsize
	le.PutUint16(b[42:], 32) // e_phentsize
	le.PutUint16(b[46:], 40) // e_shentsize
	return b
}

// FuzzParse feeds Parse arbitrary bytes. It must never panic, and whatever
// it accepts must satisfy the invariants the loader relies on.
func FuzzParse(f *testing.F) {
	_, valid := validImage(f)
	f.Add(valid)
	for _, n := range []int{4, 52, 64, 120, 200, len(valid) / 2, len(valid) - 1} {
		if n <= len(valid) {
			f.Add(bytes.Clone(valid[:n]))
		}
	}
	f.Add(elf32Header())
	f.Add([]byte("not an elf"))

	f.Fuzz(func(t *testing.T, raw []byte) {
		img, err := elffile.ParseImage("fuzz", raw)
		if err != nil {
			if img != nil {
				t.Fatal("image returned with an error")
			}
			return
		}
		if len(img.Segments) == 0 {
			t.Fatal("accepted an image with no segments")
		}
		inside := false
		for i, s := range img.Segments {
			if uint64(len(s.Data)) > s.MemSize {
				t.Fatalf("segment %d: %d data bytes > memsz %#x", i, len(s.Data), s.MemSize)
			}
			if s.End() < s.Addr {
				t.Fatalf("segment %d wraps", i)
			}
			if i > 0 && s.Addr < img.Segments[i-1].End() {
				t.Fatalf("segments %d and %d overlap", i-1, i)
			}
			if img.Entry >= s.Addr && img.Entry < s.End() {
				inside = true
			}
		}
		if !inside {
			t.Fatalf("entry %#x outside every segment", img.Entry)
		}
		if lo, hi := img.Bounds(); lo > img.Entry || hi <= img.Entry {
			t.Fatalf("bounds [%#x, %#x) exclude entry %#x", lo, hi, img.Entry)
		}
		for _, s := range img.Symbols() {
			got, ok := img.Lookup(s.Name)
			if !ok || got.Name != s.Name {
				t.Fatalf("symbol %q not found by name", s.Name)
			}
			_ = img.Describe(s.Addr)
			_ = img.Describe(s.Addr + s.Size)
		}
		_ = img.Describe(img.Entry)
	})
}
