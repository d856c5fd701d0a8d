// Package elffile reads ELF files, the two kinds reprise meets:
//
//   - a guest image (Image, image.go): a static x86-64 executable whose
//     PT_LOAD segments are placed at their physical addresses, and its
//     symbol table, which probes and profiles resolve against;
//   - the files a Linux program maps (File, file.go) — its executable,
//     loader and shared libraries — for what naming addresses in them
//     needs: symbols (.symtab when present, else .dynsym, or a separate
//     debug file found by build-id), the loadable segments that relate
//     file offsets to the file's virtual addresses, the build-id, and the
//     call-frame information the stack unwinder uses (unwind.go).
//
// The symbol tables are package symtab's, which the event database keeps
// without any ELF.
package elffile

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reprise-vm/reprise/host/userfile"
	"github.com/reprise-vm/reprise/symtab"
)

// File is an ELF file a program maps.
type File struct {
	Path    string
	BuildID string // hex, "" if the file has none
	// Symbols are at the file's virtual addresses (st_value).
	Symbols *symtab.Table
	// DebugFile is the separate debug file the symbols came from, "" if
	// they are the file's own.
	DebugFile string
	// Shared says the file is a shared library (it has a DT_SONAME): its
	// symbols are named SYMBOL@LIBRARY.
	Shared bool
	// entry is an executable's entry point (0 for a library): the code
	// there (_start) is every stack's outermost frame.
	entry uint64
	loads []segment
	data  []byte
	cfi   cfi
}

// segment is a PT_LOAD: file bytes [off, off+filesz) at [vaddr,
// vaddr+filesz), zeros up to vaddr+memsz.
type segment struct {
	vaddr, off, filesz, memsz uint64
	exec                      bool
}

// maxSymbols bounds the symbols read from one file (libc has about
// 3,000 dynamic and 10,000 debug symbols).
const maxSymbols = 1 << 20

// DebugRoot is where separate debug files are looked for, by build-id
// (.build-id/xx/yyyy.debug), as gdb and perf do.
var DebugRoot = "/usr/lib/debug"

// maxDebugFile bounds the separate debug file read for one object.
const maxDebugFile = 1 << 30

// Parse reads the ELF file data, mapped from path.
func Parse(path string, data []byte) (*File, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: not an ELF file: %w", path, err)
	}
	defer f.Close()
	o := &File{Path: path, data: data, BuildID: buildID(f)}
	if sonames, err := f.DynString(elf.DT_SONAME); err == nil && len(sonames) > 0 {
		o.Shared = true
	} else {
		o.entry = f.Entry
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Filesz > 0 {
			if p.Off > uint64(len(data)) || p.Filesz > uint64(len(data))-p.Off {
				return nil, fmt.Errorf("%s: segment at %#x+%#x is outside the %d-byte file", path, p.Off, p.Filesz, len(data))
			}
			o.loads = append(o.loads, segment{vaddr: p.Vaddr, off: p.Off, filesz: p.Filesz, memsz: max(p.Memsz, p.Filesz), exec: p.Flags&elf.PF_X != 0})
		}
	}
	syms, err := symbols(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !hasSymtab(f) && o.BuildID != "" {
		if dbg, dsyms, ok := debugSymbols(o.BuildID); ok {
			o.DebugFile, syms = dbg, append(syms, dsyms...)
		}
	}
	o.Symbols = table(syms)
	return o, nil
}

// Name is the file's base name: how a probe names a library
// (pthread_mutex_lock@libc.so.6).
func (o *File) Name() string { return filepath.Base(o.Path) }

// Matches says whether name designates the file: its base name, or its
// path when name has a slash.
func (o *File) Matches(name string) bool {
	if filepath.Base(name) != name {
		return filepath.Clean(name) == filepath.Clean(o.Path)
	}
	return name == o.Name()
}

// Offset is the file offset of the file's virtual address vaddr, if a
// loadable segment holds it.
func (o *File) Offset(vaddr uint64) (uint64, bool) {
	for _, s := range o.loads {
		if vaddr >= s.vaddr && vaddr-s.vaddr < s.filesz {
			return vaddr - s.vaddr + s.off, true
		}
	}
	return 0, false
}

// Vaddr is the file's virtual address of file offset off, if a loadable
// segment holds it.
func (o *File) Vaddr(off uint64) (uint64, bool) {
	for _, s := range o.loads {
		if off >= s.off && off-s.off < s.filesz {
			return off - s.off + s.vaddr, true
		}
	}
	return 0, false
}

// Base is where the file was loaded (the address of its virtual address
// 0) if an executable mapping maps file offset off at start: every
// segment of a loaded ELF file lies at base + its p_vaddr. Only an
// executable mapping tells: the file page where one segment ends and the
// next begins is mapped twice, at two addresses, and the executable
// segment is the one segment an executable mapping can mean.
func (o *File) Base(start, off uint64) (uint64, bool) {
	const page = 4096
	for _, s := range o.loads {
		if s.exec && off >= s.off&^(page-1) && off < s.off+s.filesz {
			return start - (s.vaddr - s.off + off), true
		}
	}
	return 0, false
}

// Span is the end of the file's loaded image, relative to its base: its
// zero-filled data (.bss) included.
func (o *File) Span() uint64 {
	var end uint64
	for _, s := range o.loads {
		end = max(end, s.vaddr+s.memsz)
	}
	return end
}

// ExecSegment is the file bytes of the executable segment holding
// vaddr, and the virtual address they start at.
func (o *File) ExecSegment(vaddr uint64) (uint64, []byte, bool) {
	for _, s := range o.loads {
		if s.exec && vaddr >= s.vaddr && vaddr-s.vaddr < s.filesz {
			return s.vaddr, o.data[s.off : s.off+s.filesz], true
		}
	}
	return 0, nil, false
}

func buildID(f *elf.File) string {
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		note := make([]byte, min(p.Filesz, 1<<16))
		if _, err := p.ReadAt(note, 0); err != nil {
			continue
		}
		for len(note) >= 12 {
			namesz := uint64(f.ByteOrder.Uint32(note))
			descsz := uint64(f.ByteOrder.Uint32(note[4:]))
			typ := f.ByteOrder.Uint32(note[8:])
			name := (namesz + 3) &^ 3
			desc := (descsz + 3) &^ 3
			if 12+name+desc > uint64(len(note)) {
				break
			}
			if typ == 3 && namesz == 4 && string(note[12:15]) == "GNU" { // NT_GNU_BUILD_ID
				return hex.EncodeToString(note[12+name : 12+name+descsz])
			}
			note = note[12+name+desc:]
		}
	}
	return ""
}

func hasSymtab(f *elf.File) bool { return f.Section(".symtab") != nil }

// ranked is a symbol and how readable its name is among those at its
// address (lower is better).
type ranked struct {
	symtab.Symbol
	rank int
}

// table orders syms so that of the names at one address the most
// readable comes last, the one symtab.Table resolves the address to.
func table(syms []ranked) *symtab.Table {
	slices.SortStableFunc(syms, func(a, b ranked) int { return cmp.Or(cmp.Compare(a.Addr, b.Addr), cmp.Compare(b.rank, a.rank)) })
	out := make([]symtab.Symbol, len(syms))
	for i, r := range syms {
		out[i] = r.Symbol
	}
	return symtab.New(out)
}

// symbols are f's function and object symbols: .symtab's, else .dynsym's.
func symbols(f *elf.File) ([]ranked, error) {
	syms, err := f.Symbols()
	if errors.Is(err, elf.ErrNoSymbols) {
		syms, err = f.DynamicSymbols()
	}
	if errors.Is(err, elf.ErrNoSymbols) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("symbol table: %w", err)
	}
	if len(syms) > maxSymbols {
		return nil, fmt.Errorf("%d symbols (at most %d)", len(syms), maxSymbols)
	}
	var out []ranked
	for _, s := range syms {
		t := elf.ST_TYPE(s.Info)
		if (t != elf.STT_FUNC && t != elf.STT_OBJECT && t != elf.STT_NOTYPE && t != elf.STT_GNU_IFUNC) ||
			s.Name == "" || s.Section == elf.SHN_UNDEF || s.Section == elf.SHN_ABS {
			continue
		}
		// A compatibility version (name@VER) is not the name's; the
		// default one (name@@VER) is. Debug files spell versions in the
		// name.
		name, version, versioned := strings.Cut(s.Name, "@")
		if s.HasVersion && s.VersionIndex.IsHidden() || versioned && !strings.HasPrefix(version, "@") {
			continue
		}
		// Of the names at one address, the one a reader knows comes
		// first: the fewest leading underscores (pthread_mutex_unlock,
		// not __pthread_mutex_unlock), then global before weak before
		// local.
		rank := 1000 * (len(name) - len(strings.TrimLeft(name, "_")))
		switch elf.ST_BIND(s.Info) {
		case elf.STB_WEAK:
			rank += 100
		case elf.STB_LOCAL:
			rank += 200
		}
		out = append(out, ranked{symtab.Symbol{Name: name, Addr: s.Value, Size: s.Size, Func: t == elf.STT_FUNC || t == elf.STT_GNU_IFUNC}, rank})
	}
	return out, nil
}

// debugSymbols reads the symbols of the separate debug file of build-id
// id, if there is one.
func debugSymbols(id string) (string, []ranked, bool) {
	if len(id) < 3 {
		return "", nil, false
	}
	path := filepath.Join(DebugRoot, ".build-id", id[:2], id[2:]+".debug")
	if _, err := os.Stat(path); err != nil {
		return "", nil, false
	}
	data, err := userfile.ReadFile(path, maxDebugFile, "debug file")
	if err != nil {
		return "", nil, false
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	syms, err := symbols(f)
	if err != nil {
		return "", nil, false
	}
	return path, syms, true
}
