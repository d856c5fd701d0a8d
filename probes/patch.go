package probes

import (
	"fmt"
	"slices"

	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/elffile"
)

// Patch is how the VMM patches a site so that its hits reach it.
type Patch uint8

const (
	// PatchInt3 writes int3 over the site's first byte: a hit traps into
	// the guest kernel, whose #BP path forwards it with a hypercall. It
	// fits every site.
	PatchInt3 Patch = iota
	// PatchExit writes `out %al, $imm8` to the probe port over the site's
	// first ExitPatchLen bytes: a hit exits to the VMM straight from CPL3,
	// one exit instead of a trap, the kernel's path and an exit. The
	// instructions it overwrites (the site's and Displaced) run out of
	// line. It needs a site those bytes may cover (ChoosePatches).
	PatchExit
)

func (p Patch) String() string {
	switch p {
	case PatchInt3:
		return "int3"
	case PatchExit:
		return "exit"
	}
	return fmt.Sprintf("Patch(%d)", uint8(p))
}

// ExitPatchLen is the length of a PatchExit patch: out %al, $imm8 (E6 ib),
// which reads al and changes no register or flag.
const ExitPatchLen = 2

// ChoosePatches decides how each of sites, the sites of one replay in
// img, is patched: PatchExit where the 2-byte out can be proved harmless,
// PatchInt3 with the reason in NoExit elsewhere. An out is harmless when
// the whole instructions it overwrites can run out of line one after the
// other and no code can reach the bytes after the first:
//   - only the last of them may branch (an earlier one would skip the
//     rest), and none may access a port (an exit there would show the
//     out-of-line address to the guest);
//   - none after the first is the target of a direct branch or call in
//     img, a symbol, or another site, and the site's function jumps
//     through no register or table (whose targets are unknown) — which
//     needs every function in img to decode, so no branch is missed; a
//     site of 2 bytes or more displaces nothing and needs none of this;
//   - no port access ends where the site starts and no exit site starts
//     2 bytes after another: at an exit RIP is at the out or past it
//     (when KVM emulated it), so those exits could pass for each other.
//
// Whether a thread stands inside the patched bytes when the patch goes
// in is the VMM's to check: it knows where threads are.
func ChoosePatches(img *elffile.Image, sites []Site) {
	cm := sweep(img)
	at := make(map[uint64]bool, len(sites))
	for _, s := range sites {
		at[s.Addr] = true
	}
	exitAt := map[uint64]bool{}
	for i := range sites {
		s := &sites[i]
		s.Patch, s.Displaced, s.NoExit = PatchInt3, nil, ""
		d, why := cm.exitPatch(img, s, at)
		if why != "" {
			s.NoExit = why
			continue
		}
		s.Patch, s.Displaced = PatchExit, d
		exitAt[s.Addr] = true
	}
	for i := range sites {
		s := &sites[i]
		if s.Patch == PatchExit && exitAt[s.Addr-ExitPatchLen] {
			s.Patch, s.Displaced = PatchInt3, nil
			s.NoExit = fmt.Sprintf("the exit site at %s starts %d bytes before it, so their exits could pass for each other", img.Describe(s.Addr-ExitPatchLen), ExitPatchLen)
			exitAt[s.Addr] = false
		}
	}
}

// codeMap is what one decoding pass over an image's executable segments
// found: where control can arrive other than by falling through.
type codeMap struct {
	targets  map[uint64]bool // direct branch and call targets, and symbols
	portEnds map[uint64]bool // where an in or out instruction ends
	indirect map[uint64]bool // functions (by symbol address) with an indirect jmp
	// anyIndirect is set by an indirect jmp outside every symbol: its
	// targets could be anywhere.
	anyIndirect bool
	broken      string // why the pass could not decode all the code
}

// sweep decodes the code of img's executable segments: each function
// symbol to its end, and each unsized untyped symbol (an asm label) to
// the next symbol. Compilers put all code in functions and asm names
// its code with labels; what no symbol names — the constants the
// segments also hold — is not code. A function that does not decode
// leaves its branches unknown; a label that does not decode is data.
func sweep(img *elffile.Image) *codeMap {
	cm := &codeMap{targets: map[uint64]bool{}, portEnds: map[uint64]bool{}, indirect: map[uint64]bool{}}
	syms := img.Symbols()
	for i, sym := range syms {
		cm.targets[sym.Addr] = true
		seg, ok := img.ExecSegment(sym.Addr)
		if !ok || !sym.Func && sym.Size != 0 {
			continue
		}
		end := seg.Addr + uint64(len(seg.Data))
		if sym.Size != 0 {
			end = min(end, sym.Addr+sym.Size)
		} else if j := slices.IndexFunc(syms[i+1:], func(n elffile.Symbol) bool { return n.Addr > sym.Addr }); j >= 0 {
			end = min(end, syms[i+1+j].Addr)
		}
		for pc := sym.Addr; pc < end; {
			inst, err := decode(seg.Data[pc-seg.Addr : end-seg.Addr])
			if err != nil {
				if sym.Func && cm.broken == "" {
					cm.broken = fmt.Sprintf("the code at %s does not decode (%v), so its branches are unknown", img.Describe(pc), err)
				}
				break
			}
			cm.note(img, pc, inst)
			pc += uint64(inst.Len)
		}
	}
	return cm
}

// note records where inst, at pc, can send control.
func (cm *codeMap) note(img *elffile.Image, pc uint64, inst x86asm.Inst) {
	n := uint64(inst.Len)
	if isPortAccess(inst.Op) {
		cm.portEnds[pc+n] = true
	}
	rel := false
	for _, a := range inst.Args {
		if r, ok := a.(x86asm.Rel); ok {
			rel = true
			cm.targets[pc+n+uint64(int64(r))] = true
		}
	}
	if inst.Op == x86asm.JMP && !rel {
		if sym, _, ok := img.Resolve(pc); ok {
			cm.indirect[sym.Addr] = true
		} else {
			cm.anyIndirect = true
		}
	}
}

// exitPatch returns the instructions after s that its exit patch
// displaces, or why s cannot have one.
func (cm *codeMap) exitPatch(img *elffile.Image, s *Site, sites map[uint64]bool) ([]Site, string) {
	if cm.portEnds[s.Addr] {
		return nil, "a port access ends where it starts, whose exit could pass for the site's"
	}
	var displaced []Site
	last := s
	for covered := s.Len; covered < ExitPatchLen; covered += last.Len {
		if last.Branch != BranchNone {
			return nil, fmt.Sprintf("it is a %d-byte %s, too short for the %d-byte exit, and the instructions after it need not run after it", last.Len, last.Branch, ExitPatchLen)
		}
		d, err := DecodeSite(img, last.Next())
		if err != nil {
			return nil, fmt.Sprintf("it is %d bytes, too short for the %d-byte exit, and the instruction after it cannot run out of line: %v", s.Len, ExitPatchLen, err)
		}
		if isPortAccess(d.Inst.Op) {
			return nil, fmt.Sprintf("the instruction after it (%s) accesses a port: its exit would show the out-of-line address", d.String())
		}
		displaced = append(displaced, d)
		last = &displaced[len(displaced)-1]
	}
	if len(displaced) > 0 {
		switch sym, _, ok := img.Resolve(s.Addr); {
		case cm.broken != "":
			return nil, cm.broken
		case cm.anyIndirect:
			return nil, "code outside every symbol jumps through a register or table, to targets unknown"
		case !ok:
			return nil, "no symbol holds it, so its function's branches are unknown"
		case cm.indirect[sym.Addr]:
			return nil, fmt.Sprintf("%s jumps through a register or table, to targets unknown", sym.Name)
		}
	}
	for a := s.Addr + 1; a < last.Next(); a++ {
		switch {
		case sites[a]:
			return nil, fmt.Sprintf("the site at %s is among the instructions its exit would overwrite", img.Describe(a))
		case cm.targets[a]:
			return nil, fmt.Sprintf("%s, among the instructions its exit would overwrite, is a branch target", img.Describe(a))
		}
	}
	return displaced, ""
}

func isPortAccess(op x86asm.Op) bool {
	switch op {
	case x86asm.IN, x86asm.OUT, x86asm.INSB, x86asm.INSW, x86asm.INSD, x86asm.OUTSB, x86asm.OUTSW, x86asm.OUTSD:
		return true
	}
	return false
}
