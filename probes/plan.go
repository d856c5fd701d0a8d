package probes

import (
	"fmt"
	"slices"
	"sort"

	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/elffile"
)

// Plan is what a replay executes: the probes users asked for and the
// sites the VMM patches for them, each saying how (Site.Patch). Resolve builds it; it is not
// changed afterwards and is safe for concurrent use.
type Plan struct {
	Probes []Probe // Probes[i].ID == i
	Sites  []Site  // sorted by Addr, one per address
	img    *elffile.Image
}

// Probe is a resolved probe: what the user asked for, with its address.
type Probe struct {
	ID     uint32
	Name   string
	Spec   string // the spec's text, for messages and the event DB
	Symbol string
	Off    uint64
	// Addr is where the probe's site is: SYMBOL+OFF, or for a %return
	// probe the function's entry, where the VMM reads the return address
	// at [rsp] and plants the one-shot return site (Plan.ReturnSite).
	Addr    uint64
	Return  bool
	Args    []Arg
	Threads []uint32 // empty = every thread
}

// WantsThread reports whether a hit by thread tid is reported.
func (p *Probe) WantsThread(tid uint32) bool {
	return len(p.Threads) == 0 || slices.Contains(p.Threads, tid)
}

// BranchKind says how an instruction transfers control, which decides how
// the VMM executes it out of line (see the package documentation).
type BranchKind uint8

const (
	BranchNone  BranchKind = iota // falls through to Addr+Len
	BranchCall                    // near call, relative or indirect
	BranchJmp                     // near jmp, relative or indirect
	BranchJcc                     // conditional jump on the flags (Site.Cond)
	BranchRet                     // near ret, ret imm16
	BranchOther                   // loop, loope, loopne, jrcxz, jecxz: rel8, conditional on rcx/ecx
)

func (k BranchKind) String() string {
	switch k {
	case BranchNone:
		return "none"
	case BranchCall:
		return "call"
	case BranchJmp:
		return "jmp"
	case BranchJcc:
		return "jcc"
	case BranchRet:
		return "ret"
	case BranchOther:
		return "other"
	}
	return fmt.Sprintf("BranchKind(%d)", uint8(k))
}

// Site is one patched instruction (practice 9: probes that share an
// address share its site). The VMM patches it as Patch says and, at a
// hit, executes the instruction out of line or emulates it.
type Site struct {
	Addr uint64
	Orig []byte // the whole instruction, Len bytes; only Orig[0] is patched
	Len  int
	// RIPRelDispOff is the offset in Orig of the 32-bit displacement of a
	// RIP-relative memory operand (relative to Addr+Len), or -1.
	RIPRelDispOff int
	Branch        BranchKind
	Indirect      bool   // a call or jmp through a register or memory operand
	Target        uint64 // a relative branch's destination; 0 otherwise
	Probes        []uint32
	Inst          x86asm.Inst // the decoded instruction
	// Patch is how the site is patched (ChoosePatches). A PatchExit
	// patch also overwrites Displaced, the whole instructions after
	// this one up to ExitPatchLen bytes, which run out of line with it.
	// NoExit says why a PatchInt3 site could not have PatchExit.
	Patch     Patch
	Displaced []Site
	NoExit    string
}

// Next is the address of the instruction that follows in place, which is
// also a call's return address.
func (s *Site) Next() uint64 { return s.Addr + uint64(s.Len) }

// Cond is a BranchJcc's condition code (the low nibble of its 0x7x / 0x0F
// 0x8x opcode).
func (s *Site) Cond() (byte, bool) {
	cc, ok := jccCond[s.Inst.Op]
	return cc, ok && s.Branch == BranchJcc
}

var jccCond = map[x86asm.Op]byte{
	x86asm.JO: 0x0, x86asm.JNO: 0x1, x86asm.JB: 0x2, x86asm.JAE: 0x3,
	x86asm.JE: 0x4, x86asm.JNE: 0x5, x86asm.JBE: 0x6, x86asm.JA: 0x7,
	x86asm.JS: 0x8, x86asm.JNS: 0x9, x86asm.JP: 0xA, x86asm.JNP: 0xB,
	x86asm.JL: 0xC, x86asm.JGE: 0xD, x86asm.JLE: 0xE, x86asm.JG: 0xF,
}

// String is the instruction in GNU syntax, as objdump prints it.
func (s *Site) String() string {
	return fmt.Sprintf("%#x: %s", s.Addr, x86asm.GNUSyntax(s.Inst, s.Addr, nil))
}

// SiteAt finds the site at addr.
func (p *Plan) SiteAt(addr uint64) (*Site, bool) {
	i := sort.Search(len(p.Sites), func(i int) bool { return p.Sites[i].Addr >= addr })
	if i < len(p.Sites) && p.Sites[i].Addr == addr {
		return &p.Sites[i], true
	}
	return nil, false
}

// Probe returns the probe with the given id.
func (p *Plan) Probe(id uint32) (*Probe, bool) {
	if uint64(id) >= uint64(len(p.Probes)) {
		return nil, false
	}
	return &p.Probes[id], true
}

// ReturnSite decodes the one-shot site for a %return probe whose entry
// was hit with retAddr at [rsp]. It checks that a call instruction ends
// at retAddr, so a corrupt or unusual stack does not make the VMM patch
// the middle of an instruction. The site's Probes is empty: the VMM knows
// which pending return it stands for.
func (p *Plan) ReturnSite(retAddr uint64) (Site, error) {
	if p.img == nil {
		return Site{}, fmt.Errorf("probes: plan has no image")
	}
	s, err := DecodeSite(p.img, retAddr)
	if err != nil {
		return Site{}, err
	}
	if !afterCall(p.img, retAddr) {
		return Site{}, fmt.Errorf("probes: %s is not a return address: no call instruction ends there", p.img.Describe(retAddr))
	}
	return s, nil
}

// afterCall reports whether some call instruction ends at addr.
func afterCall(img *elffile.Image, addr uint64) bool {
	seg, ok := img.ExecSegment(addr - 1)
	if !ok {
		return false
	}
	for n := uint64(2); n <= 15; n++ { // call rel32 is 5 bytes, call r/m 2 and up
		if addr-seg.Addr < n {
			break
		}
		inst, err := decode(seg.Data[addr-n-seg.Addr : addr-seg.Addr])
		if err == nil && uint64(inst.Len) == n && inst.Op == x86asm.CALL {
			return true
		}
	}
	return false
}
