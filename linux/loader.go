package linux

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/reprise-vm/reprise/linux/mm"
)

// Auxiliary vector entry types (the ones a program is given).
const (
	atNull        = 0
	atPHDR        = 3
	atPHENT       = 4
	atPHNUM       = 5
	atPAGESZ      = 6
	atBASE        = 7
	atFLAGS       = 8
	atENTRY       = 9
	atUID         = 11
	atEUID        = 12
	atGID         = 13
	atEGID        = 14
	atPLATFORM    = 15
	atHWCAP       = 16
	atCLKTCK      = 17
	atSECURE      = 23
	atRANDOM      = 25
	atHWCAP2      = 26
	atEXECFN      = 31
	atMINSIGSTKSZ = 51
)

// executable is a Linux ELF executable as loaded: where its entry point
// and program headers ended up, and where its heap starts.
type executable struct {
	entry   uint64
	phdr    uint64 // address of the program headers in memory
	phnum   int
	brk     uint64    // the first page past the highest segment
	interp  string    // PT_INTERP: the dynamic loader it asks for ("": static)
	dynamic bool      // ET_DYN
	base    uint64    // where an ET_DYN was loaded
	span    uint64    // the bytes its segments cover from base
	text    [2]uint64 // its .text section in memory, [start, end)
	funcs   []uint64  // the functions its symbol table places in .text, sorted
	// textBytes are the file's bytes loaded at text, where one segment
	// alone loaded them (nil otherwise: read them from memory).
	textBytes []byte
	// interpBase is where the loader was put (AT_BASE; 0: static).
	interpBase uint64
}

// maxSegments bounds the PT_LOAD segments of an executable (a file is as
// untrusted as a tape).
const maxSegments = 64

// parseELF reads an ELF file's headers. What is not an ELF file at all may
// be any file, so the error does not quote it (debug/elf's puts the first
// bytes in its message).
func parseELF(r io.ReaderAt) (*elf.File, error) {
	var magic [len(elf.ELFMAG)]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil || string(magic[:]) != elf.ELFMAG {
		return nil, errors.New("not an ELF file (no ELF magic number)")
	}
	return elf.NewFile(r)
}

// load maps the PT_LOAD segments of the ELF file raw (at path) into as:
// at their addresses for ET_EXEC, at base plus them for ET_DYN.
func load(as *mm.Space, path string, raw []byte, base uint64) (*executable, error) {
	f, err := parseELF(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	switch {
	case f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64:
		return nil, fmt.Errorf("%v %v: reprise runs x86-64 executables", f.Class, f.Machine)
	case f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN:
		return nil, fmt.Errorf("ELF type %v is not an executable", f.Type)
	}
	x := &executable{dynamic: f.Type == elf.ET_DYN}
	if !x.dynamic {
		base = 0
	}
	x.base = base
	text := f.Section(".text")
	if text != nil {
		x.text = [2]uint64{base + text.Addr, base + text.Addr + text.Size}
		x.funcs = functions(f, text, base)
	}
	if x.interp, err = interpreter(f); err != nil {
		return nil, err
	}
	var loads []*elf.Prog
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_LOAD:
			if p.Memsz > 0 {
				loads = append(loads, p)
			}
		case elf.PT_PHDR:
			x.phdr = base + p.Vaddr
		}
	}
	if len(loads) == 0 || len(loads) > maxSegments {
		return nil, fmt.Errorf("%d loadable segments (want 1 to %d)", len(loads), maxSegments)
	}
	for i, p := range loads {
		start := base + p.Vaddr
		end, ok := mm.CheckRange(start&^pageMask, pageUp(start+p.Memsz)-start&^pageMask)
		if !ok || p.Filesz > p.Memsz || p.Vaddr+p.Memsz < p.Vaddr {
			return nil, fmt.Errorf("segment %d at %#x+%#x is outside the program's address space [%#x, %#x)", i, start, p.Memsz, uint64(minUserAddr), uint64(maxUserAddr))
		}
		if p.Off > uint64(len(raw)) || p.Filesz > uint64(len(raw))-p.Off {
			return nil, fmt.Errorf("segment %d: file range %#x+%#x is outside the %d-byte file", i, p.Off, p.Filesz, len(raw))
		}
		if err := as.Map(start&^pageMask, end, protOf(p.Flags)); err != nil {
			return nil, err
		}
		if err := as.Load(start, raw[p.Off:p.Off+p.Filesz]); err != nil {
			return nil, err
		}
		as.AddFile(Mapping{Path: path, Start: start &^ pageMask, End: end, Offset: p.Off - start&pageMask, Exec: p.Flags&elf.PF_X != 0}, raw)
		x.brk = max(x.brk, end)
		if off := phoff(raw); x.phdr == 0 && off >= p.Off && off < p.Off+p.Filesz {
			x.phdr = start + off - p.Off // the headers are in this segment
		}
	}
	if text != nil {
		x.textBytes = loadedFrom(loads, raw, text)
	}
	x.entry = base + f.Entry
	x.phnum = len(f.Progs)
	x.span = x.brk - base
	return x, nil
}

// loadedFrom is the part of raw that segments loads put at section s's
// addresses — when one segment's file part holds all of s and no other
// segment reaches into it (a hostile file may overlap them) — or nil.
func loadedFrom(loads []*elf.Prog, raw []byte, s *elf.Section) []byte {
	var from *elf.Prog
	for _, p := range loads {
		if p.Vaddr < s.Addr+s.Size && s.Addr < p.Vaddr+p.Memsz {
			if from != nil {
				return nil
			}
			from = p
		}
	}
	if from == nil || s.Addr < from.Vaddr || s.Addr+s.Size > from.Vaddr+from.Filesz || s.Addr+s.Size < s.Addr {
		return nil
	}
	off := from.Off + s.Addr - from.Vaddr
	return raw[off : off+s.Size : off+s.Size]
}

// maxFunctions bounds the symbols read from an executable.
const maxFunctions = 1 << 20

// functions are the start addresses, sorted and distinct, of the function
// symbols in section text of f, loaded at base; none for a file without a
// symbol table.
func functions(f *elf.File, text *elf.Section, base uint64) []uint64 {
	syms, err := f.Symbols()
	if err != nil || len(syms) > maxFunctions {
		return nil
	}
	var out []uint64
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value >= text.Addr && s.Value < text.Addr+text.Size {
			out = append(out, base+s.Value)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// span is the memory the PT_LOAD segments of the ELF file raw cover, from
// address 0: what an ET_DYN needs free to be loaded.
func span(raw []byte) (uint64, error) {
	f, err := parseELF(bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var end uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Vaddr+p.Memsz >= p.Vaddr {
			end = max(end, pageUp(p.Vaddr+p.Memsz))
		}
	}
	if end == 0 || end > maxUserAddr {
		return 0, fmt.Errorf("segments spanning %#x bytes", end)
	}
	return end, nil
}

// phoff is the file offset of the program headers (e_phoff; the file is a
// valid ELF64 file, so its header is there).
func phoff(raw []byte) uint64 { return binary.LittleEndian.Uint64(raw[0x20:]) }

func protOf(f elf.ProgFlag) mm.Prot {
	var p mm.Prot
	if f&elf.PF_R != 0 {
		p |= mm.ProtRead
	}
	if f&elf.PF_W != 0 {
		p |= mm.ProtWrite
	}
	if f&elf.PF_X != 0 {
		p |= mm.ProtExec | mm.ProtRead
	}
	return p
}

func pageUp(v uint64) uint64 { return (v + pageMask) &^ pageMask }

// initialStack is what a new image's stack is built from besides the
// executable's addresses.
type initialStack struct {
	execfn      string // the path the image was run by (AT_EXECFN)
	argv, envp  []string
	random      [randomBytes]byte
	hwcap       uint64
	minSigStack uint64 // AT_MINSIGSTKSZ (sigStackSize)
	cred        creds  // AT_UID, AT_EUID, AT_GID, AT_EGID
}

const (
	elfPlatform = "x86_64" // AT_PLATFORM: ELF_PLATFORM, the machine uname gives
	endMarker   = 8        // zero bytes above the strings
)

// stackImage writes the initial stack below top as Linux lays it out —
// fs/exec.c copies the strings below an end marker, then binfmt_elf.c's
// create_elf_tables adds the rest — and returns the stack pointer the
// program starts with (16-byte aligned, at argc):
//
//	top-8        the end marker: 8 zero bytes
//	             execfn
//	             envp's strings, argv's below them (each list in order)
//	p            argv[0], the lowest string
//	p&^15 - 7    the platform string
//	             AT_RANDOM's 16 bytes
//	             padding to 16
//	             auxv: (type, value) pairs to AT_NULL
//	             envp, 0
//	             argv, 0
//	sp           argc
//
// Programs count on the strings being followed by more stack: glibc's
// tunables parser reads past the end of the environment's last string.
//
// argStrings is where argv's strings lie, [argv[0], past the last's NUL)
// — what /proc/PID/cmdline reads — and the environment's after them, to
// the end of its last (environ).
func argStrings(top uint64, s *initialStack) [3]uint64 {
	strBytes := uint64(len(s.execfn)) + 1 + endMarker
	var argBytes uint64
	for i, list := range [][]string{s.argv, s.envp} {
		for _, str := range list {
			strBytes += uint64(len(str)) + 1
			if i == 0 {
				argBytes += uint64(len(str)) + 1
			}
		}
	}
	start := top - strBytes
	return [3]uint64{start, start + argBytes, top - endMarker - uint64(len(s.execfn)+1)}
}

func stackImage(as *mm.Space, top uint64, x *executable, s *initialStack) (uint64, error) {
	start := argStrings(top, s)[0] // argv[0]
	fn := top - endMarker - uint64(len(s.execfn)+1)
	plat := start&^15 - uint64(len(elfPlatform)+1)
	rnd := plat - randomBytes

	// The order of Linux's x86-64 auxv, ARCH_DLINFO's AT_MINSIGSTKSZ
	// first. There is no AT_SYSINFO_EHDR, as there is no vDSO, and no
	// AT_RSEQ_*, as there is no rseq.
	auxv := []uint64{
		atMINSIGSTKSZ, s.minSigStack, atHWCAP, s.hwcap, atPAGESZ, pageSize, atCLKTCK, 100,
		atPHDR, x.phdr, atPHENT, 56, atPHNUM, uint64(x.phnum), atBASE, x.interpBase,
		atFLAGS, 0, atENTRY, x.entry, atUID, uint64(s.cred.uid), atEUID, uint64(s.cred.euid), atGID, uint64(s.cred.gid), atEGID, uint64(s.cred.egid),
		atSECURE, 0, atRANDOM, rnd, atHWCAP2, 0, atEXECFN, fn, atPLATFORM, plat, atNull, 0,
	}
	nwords := 1 + len(s.argv) + 1 + len(s.envp) + 1 + len(auxv)
	sp := (rnd - uint64(nwords)*8) &^ 15
	if top-sp > stackSize {
		return 0, fmt.Errorf("arguments, environment and path need %d bytes of the %d-byte stack", top-sp, stackSize)
	}

	// Every NUL, the end marker and the padding are b's zeros.
	b := make([]byte, top-sp)
	words := make([]uint64, 0, nwords)
	words = append(words, uint64(len(s.argv)))
	at := start
	for _, list := range [][]string{s.argv, s.envp} {
		for _, str := range list {
			words = append(words, at)
			copy(b[at-sp:], str)
			at += uint64(len(str)) + 1
		}
		words = append(words, 0)
	}
	words = append(words, auxv...)
	for i, w := range words {
		binary.LittleEndian.PutUint64(b[i*8:], w)
	}
	copy(b[fn-sp:], s.execfn)
	copy(b[plat-sp:], elfPlatform)
	copy(b[rnd-sp:], s.random[:])
	return sp, as.Write(sp, b)
}

// Linux sizes AT_MINSIGSTKSZ for the largest signal frame of any ABI it
// runs (arch/x86/kernel/signal.c, init_sigframe_size). A distribution's
// kernel runs 32-bit programs too, so that is struct sigframe_ia32, and an
// i387 header (struct fregs_state) may precede the XSAVE image; each is
// counted with its worst alignment padding.
const (
	ia32SigframeBytes = 736
	fsaveHeaderBytes  = 112
	framePadding      = 15 // the frame's 16-byte alignment
	xsavePadding      = 63 // the XSAVE image's 64-byte alignment
)

// sigStackSize is AT_MINSIGSTKSZ on a CPU whose signal frames carry
// fpstate bytes of extended state (xsaveLayout.frameBytes: the image and
// FP_XSTATE_MAGIC2): the most stack a signal's frame takes, rounded up to
// 16 bytes, as Linux's get_sigframe_size gives it.
func sigStackSize(fpstate int) uint64 {
	n := ia32SigframeBytes + framePadding + fsaveHeaderBytes + fpstate + xsavePadding
	return uint64(n+15) &^ 15
}

// interpreter is the loader f asks for (PT_INTERP), or "".
func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, min(p.Filesz, 4096))
			if _, err := p.ReadAt(b, 0); err != nil {
				return "", fmt.Errorf("PT_INTERP: %w", err)
			}
			return string(bytes.TrimRight(b, "\x00")), nil
		}
	}
	return "", nil
}
