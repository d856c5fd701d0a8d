package elffile

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// cfi is a file's call-frame information (.eh_frame), parsed on first
// use.
type cfi struct {
	once sync.Once
	fdes frame.FrameDescriptionEntries
	err  error
}

// frameAt establishes the frame of the code at the file's virtual
// address pc: how to find the caller's registers.
func (o *File) frameAt(pc uint64) (ctx *frame.FrameContext, err error) {
	// The file is the program's, as untrusted as the program: a parser
	// that panics on it fails this unwind, not the replay.
	defer func() {
		if r := recover(); r != nil {
			ctx, err = nil, fmt.Errorf("%s: call-frame information: %v", o.Path, r)
		}
	}()
	fde, err := o.fdeFor(pc)
	if err != nil {
		return nil, err
	}
	return fde.EstablishFrame(pc)
}

// fdeFor is the call-frame information of the function at pc.
func (o *File) fdeFor(pc uint64) (*frame.FrameDescriptionEntry, error) {
	o.cfi.once.Do(func() { o.cfi.fdes, o.cfi.err = parseEHFrame(o.data) })
	if o.cfi.err != nil {
		return nil, o.cfi.err
	}
	return o.cfi.fdes.FDEForPC(pc)
}

// maxEHFrame bounds the .eh_frame section parsed (libc's is 60 KiB).
const maxEHFrame = 64 << 20

func parseEHFrame(data []byte) (fdes frame.FrameDescriptionEntries, err error) {
	defer func() {
		if r := recover(); r != nil {
			fdes, err = nil, fmt.Errorf(".eh_frame: %v", r)
		}
	}()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := f.Section(".eh_frame")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, fmt.Errorf("no .eh_frame")
	}
	if s.Size > maxEHFrame {
		return nil, fmt.Errorf(".eh_frame of %d bytes (at most %d)", s.Size, maxEHFrame)
	}
	b, err := s.Data()
	if err != nil {
		return nil, err
	}
	return frame.Parse(b, binary.LittleEndian, 0, 8, s.Addr)
}

// Regs are the registers an unwind starts from.
type Regs struct{ RIP, RSP, RBP uint64 }

// Memory reads a word of the unwound thread's memory.
type Memory func(addr uint64) (uint64, error)

// Locate finds the file mapped at pc and its load base.
type Locate func(pc uint64) (f *File, base uint64, ok bool)

// DWARF register numbers on x86-64.
const (
	dwarfRBP = 6
	dwarfRSP = 7
	dwarfRA  = 16
)

// Unwind walks the call stack from regs and returns the return addresses,
// innermost first, at most max: with each file's call-frame information
// (.eh_frame, as perf record --call-graph dwarf does), and the frame
// pointer where a file has none for the code. It stops at the first
// frame it cannot unwind.
func Unwind(regs Regs, mem Memory, locate Locate, max int) []uint64 {
	var out []uint64
	for _, f := range Frames(regs, mem, locate, max) {
		out = append(out, f.Return)
	}
	return out
}

// Frame is one call on the stack: the code it is at, the address it
// returns to, and the stack pointer once it has returned (the canonical
// frame address).
type Frame struct{ PC, Return, CFA uint64 }

// Frames walks the call stack from regs as Unwind does, innermost first,
// up to the outermost frame — a return address of 0, as the C libraries
// leave at a thread's start, or the executable's entry code — or the first
// frame it cannot unwind.
//
// Code without call-frame information is unwound through its frame
// pointer; the innermost frame, first, as a leaf that has pushed nothing
// (the assembly system-call stubs of the C libraries) when the word at
// the stack pointer is a return address into a mapped file.
func Frames(regs Regs, mem Memory, locate Locate, max int) (frames []Frame) {
	pc, sp, fp := regs.RIP, regs.RSP, regs.RBP
	for len(frames) < max {
		lookup := pc
		if len(frames) > 0 {
			lookup-- // a return address: the call is the byte before
			if f, base, ok := locate(lookup); ok && f.entry != 0 && lookup-base >= f.entry && lookup-base < f.entry+maxEntryCode {
				return frames
			}
		}
		ra, cfa, nfp, ok := cfiStep(lookup, sp, fp, mem, locate)
		if !ok && len(frames) == 0 {
			ra, cfa, nfp, ok = leafStep(sp, fp, mem, locate)
		}
		if !ok {
			ra, cfa, nfp, ok = fpStep(fp, mem)
		}
		if !ok || ra == 0 || cfa <= sp {
			return frames
		}
		frames = append(frames, Frame{PC: pc, Return: ra, CFA: cfa})
		pc, sp, fp = ra, cfa, nfp
	}
	return frames
}

// FunctionStart is the start of the function holding the file's virtual
// address pc, from its call-frame information.
func (o *File) FunctionStart(pc uint64) (start uint64, ok bool) {
	defer func() {
		if recover() != nil { // as frameAt: the file is untrusted
			start, ok = 0, false
		}
	}()
	fde, err := o.fdeFor(pc)
	if err != nil {
		return 0, false
	}
	return fde.Begin(), true
}

// cfiStep unwinds one frame with the call-frame information of the file
// holding pc.
func cfiStep(pc, sp, fp uint64, mem Memory, locate Locate) (ra, cfa, nfp uint64, ok bool) {
	f, base, ok := locate(pc)
	if !ok {
		return 0, 0, 0, false
	}
	ctx, err := f.frameAt(pc - base)
	if err != nil || ctx.CFA.Rule != frame.RuleCFA {
		return 0, 0, 0, false
	}
	switch ctx.CFA.Reg {
	case dwarfRSP:
		cfa = uint64(int64(sp) + ctx.CFA.Offset)
	case dwarfRBP:
		cfa = uint64(int64(fp) + ctx.CFA.Offset)
	default:
		return 0, 0, 0, false
	}
	r, found := ctx.Regs[dwarfRA]
	if !found || r.Rule != frame.RuleOffset {
		return 0, 0, 0, false
	}
	if ra, err = mem(uint64(int64(cfa) + r.Offset)); err != nil {
		return 0, 0, 0, false
	}
	nfp = fp
	if r, found := ctx.Regs[dwarfRBP]; found && r.Rule == frame.RuleOffset {
		if nfp, err = mem(uint64(int64(cfa) + r.Offset)); err != nil {
			return 0, 0, 0, false
		}
	}
	return ra, cfa, nfp, true
}

// maxEntryCode bounds an executable's entry code (_start: 40 bytes in
// glibc, fewer in musl).
const maxEntryCode = 64

// leafStep unwinds a function that has pushed nothing: the return
// address is at the stack pointer, if it points into a mapped file.
func leafStep(sp, fp uint64, mem Memory, locate Locate) (ra, cfa, nfp uint64, ok bool) {
	ra, err := mem(sp)
	if err != nil || ra == 0 {
		return 0, 0, 0, false
	}
	if _, _, ok := locate(ra - 1); !ok {
		return 0, 0, 0, false
	}
	return ra, sp + 8, fp, true
}

// fpStep unwinds one frame through the frame pointer: [rbp] is the
// caller's rbp, [rbp+8] the return address.
func fpStep(fp uint64, mem Memory) (ra, cfa, nfp uint64, ok bool) {
	if fp == 0 || fp%8 != 0 {
		return 0, 0, 0, false
	}
	nfp, err1 := mem(fp)
	ra, err2 := mem(fp + 8)
	if err1 != nil || err2 != nil || nfp != 0 && nfp <= fp {
		return 0, 0, 0, false
	}
	return ra, fp + 16, nfp, true
}
