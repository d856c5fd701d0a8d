// A guest image (Image): a static x86-64 ELF executable whose PT_LOAD
// segments are placed at their physical addresses, with its symbol table,
// which probes and profiles resolve against.

package elffile

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/reprise-vm/reprise/host/userfile"
	"github.com/reprise-vm/reprise/symtab"
)

// Segment is one PT_LOAD segment.
type Segment struct {
	Addr     uint64 // guest-physical load address (p_paddr)
	Data     []byte // file contents (p_filesz bytes)
	MemSize  uint64 // p_memsz; bytes past len(Data) are zero
	Writable bool
	Exec     bool
}

// End is the first address past the segment in memory.
func (s Segment) End() uint64 { return s.Addr + s.MemSize }

// Symbol is a function or object symbol of the image.
type Symbol = symtab.Symbol

// Image is a loaded, validated guest image.
type Image struct {
	Path     string
	Entry    uint64
	Segments []Segment
	SHA256   [32]byte
	Raw      []byte // the file's bytes (a recording embeds them)
	symbols  *symtab.Table
}

// FormatError explains why a file is not a usable guest image.
type FormatError struct {
	Path string
	Msg  string
}

func (e *FormatError) Error() string { return fmt.Sprintf("guest image %s: %s", e.Path, e.Msg) }

// MaxImageBytes is the largest image file OpenImage reads: as much as a tape
// embeds. A larger file is refused before it is read.
const MaxImageBytes = 256 << 20

// OpenImage reads and validates the image at path, a regular file of at most
// MaxImageBytes.
func OpenImage(path string) (*Image, error) {
	raw, err := userfile.ReadFile(path, MaxImageBytes, "guest image")
	if err != nil {
		return nil, fmt.Errorf("guest image: %w", err)
	}
	return ParseImage(path, raw)
}

// ParseImage validates raw as a guest image; path is only used in messages.
func ParseImage(path string, raw []byte) (*Image, error) {
	bad := func(format string, args ...any) error {
		return &FormatError{Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	if len(raw) < 4 || !bytes.Equal(raw[:4], []byte(elf.ELFMAG)) {
		return nil, bad("not an ELF file (no \\x7fELF magic)")
	}
	f, err := elf.NewFile(bytes.NewReader(raw))
	if err != nil {
		return nil, bad("malformed ELF: %v", err)
	}
	defer f.Close()
	switch {
	case f.Class != elf.ELFCLASS64:
		return nil, bad("%v, want a 64-bit ELF", f.Class)
	case f.Machine != elf.EM_X86_64:
		return nil, bad("machine %v, want EM_X86_64", f.Machine)
	case f.Type != elf.ET_EXEC:
		return nil, bad("type %v, want a static executable (ET_EXEC)", f.Type)
	}
	img := &Image{Path: path, Entry: f.Entry, SHA256: sha256.Sum256(raw), Raw: raw}
	for i, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Memsz == 0 {
			continue
		}
		if p.Filesz > p.Memsz {
			return nil, bad("segment %d: file size %#x exceeds memory size %#x", i, p.Filesz, p.Memsz)
		}
		if p.Paddr+p.Memsz < p.Paddr {
			return nil, bad("segment %d: address range overflows", i)
		}
		if p.Off > uint64(len(raw)) || p.Filesz > uint64(len(raw))-p.Off {
			return nil, bad("segment %d: file range %#x+%#x lies outside the %d-byte file", i, p.Off, p.Filesz, len(raw))
		}
		data := make([]byte, p.Filesz)
		// A zero-length ReadAt reports EOF; a bss-only segment has nothing to read.
		if _, err := p.ReadAt(data, 0); err != nil && p.Filesz > 0 {
			return nil, bad("segment %d: reading %#x bytes at file offset %#x: %v", i, p.Filesz, p.Off, err)
		}
		img.Segments = append(img.Segments, Segment{
			Addr: p.Paddr, Data: data, MemSize: p.Memsz,
			Writable: p.Flags&elf.PF_W != 0, Exec: p.Flags&elf.PF_X != 0,
		})
	}
	if len(img.Segments) == 0 {
		return nil, bad("no loadable segments")
	}
	sort.Slice(img.Segments, func(i, j int) bool { return img.Segments[i].Addr < img.Segments[j].Addr })
	for i := 1; i < len(img.Segments); i++ {
		if img.Segments[i].Addr < img.Segments[i-1].End() {
			return nil, bad("segments at %#x and %#x overlap", img.Segments[i-1].Addr, img.Segments[i].Addr)
		}
	}
	if !img.contains(img.Entry) {
		return nil, bad("entry point %#x is outside every loadable segment", img.Entry)
	}
	if err := img.readSymbols(f); err != nil {
		return nil, bad("%v", err)
	}
	return img, nil
}

// ExecSegment finds the executable segment whose file bytes hold addr.
func (img *Image) ExecSegment(addr uint64) (Segment, bool) {
	for _, s := range img.Segments {
		if s.Exec && addr >= s.Addr && addr-s.Addr < uint64(len(s.Data)) {
			return s, true
		}
	}
	return Segment{}, false
}

func (img *Image) contains(addr uint64) bool {
	for _, s := range img.Segments {
		if addr >= s.Addr && addr < s.End() {
			return true
		}
	}
	return false
}

func (img *Image) readSymbols(f *elf.File) error {
	syms, err := f.Symbols()
	if errors.Is(err, elf.ErrNoSymbols) {
		syms = nil
	} else if err != nil {
		return fmt.Errorf("symbol table: %v", err)
	}
	var table []Symbol
	for _, s := range syms {
		t := elf.ST_TYPE(s.Info)
		if (t != elf.STT_FUNC && t != elf.STT_OBJECT && t != elf.STT_NOTYPE) || s.Name == "" || s.Section == elf.SHN_UNDEF {
			continue
		}
		table = append(table, Symbol{Name: s.Name, Addr: s.Value, Size: s.Size, Func: t == elf.STT_FUNC})
	}
	img.symbols = symtab.New(table)
	return nil
}

// SymbolTable is the image's symbol table, which the event DB keeps too.
func (img *Image) SymbolTable() *symtab.Table { return img.symbols }

// Symbols returns the image's symbols sorted by address.
func (img *Image) Symbols() []Symbol { return img.symbols.All() }

// Lookup finds a symbol by name.
func (img *Image) Lookup(name string) (Symbol, bool) { return img.symbols.Lookup(name) }

// Resolve maps addr to the nearest symbol at or below it and the offset
// into it (symtab.Table.Resolve).
func (img *Image) Resolve(addr uint64) (Symbol, uint64, bool) { return img.symbols.Resolve(addr) }

// Describe formats addr as "symbol+0xoff", or the bare address.
func (img *Image) Describe(addr uint64) string { return img.symbols.Describe(addr) }

// Bounds returns the lowest and one-past-highest loaded address.
func (img *Image) Bounds() (lo, hi uint64) {
	lo = img.Segments[0].Addr
	for _, s := range img.Segments {
		hi = max(hi, s.End())
	}
	return lo, hi
}

// LoadsAs reports whether img and other put the same bytes at the same
// addresses and start at the same entry: one program, whatever else the
// files hold (debugging information, say).
func (img *Image) LoadsAs(other *Image) bool {
	return img.Entry == other.Entry && slices.EqualFunc(img.Segments, other.Segments, func(a, b Segment) bool {
		return a.Addr == b.Addr && a.MemSize == b.MemSize && a.Writable == b.Writable && a.Exec == b.Exec && bytes.Equal(a.Data, b.Data)
	})
}
