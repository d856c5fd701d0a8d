package probes

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/symtab"
)

// maxInstLen is the architectural limit on an x86 instruction's length.
const maxInstLen = 15

// DecodeSite decodes the instruction at addr, which the caller knows to be
// an instruction boundary, and checks that the VMM can probe it: execute
// it out of line or emulate it without the guest noticing. The result has
// no Probes.
func DecodeSite(img *elffile.Image, addr uint64) (Site, error) {
	seg, ok := img.ExecSegment(addr)
	if !ok {
		return Site{}, fmt.Errorf("probes: %s is not in the code of an executable segment", img.Describe(addr))
	}
	off := addr - seg.Addr
	code := seg.Data[off:min(off+maxInstLen, uint64(len(seg.Data)))]
	s, err := DecodeBytes(addr, code)
	if err != nil {
		return Site{}, fmt.Errorf("probes: %s: %w", img.Describe(addr), err)
	}
	if err := counterLoadRefusal(img.SymbolTable(), s); err != nil {
		return Site{}, fmt.Errorf("probes: %s: %w", img.Describe(addr), err)
	}
	return s, nil
}

// counterLoadRefusal refuses a site at the register counter's load in code
// that counts in r15: the guest stops there at its count targets, and an
// interrupt injected while the load runs out of line would push the
// copy's address into the guest's memory.
func counterLoadRefusal(syms *symtab.Table, s Site) error {
	if _, r15 := syms.Lookup(abi.SWBCRegisterSymbol); !r15 || !counterLoad(s.Inst) {
		return nil
	}
	return errors.New("cannot probe the branch counter's load (movzbl (%r15),%r14d), where the guest stops at its counts: probe the lea before it or the instruction after it")
}

// counterLoad reports whether inst is the register counter's load.
func counterLoad(inst x86asm.Inst) bool {
	if inst.Op != x86asm.MOVZX || inst.Args[0] != x86asm.R14L {
		return false
	}
	m, ok := inst.Args[1].(x86asm.Mem)
	return ok && m.Base == x86asm.R15 && m.Index == 0 && m.Disp == 0
}

// DecodeBytes decodes the instruction at the start of code, found at
// addr, and checks it can be probed, as DecodeSite does.
func DecodeBytes(addr uint64, code []byte) (Site, error) {
	inst, err := decode(code)
	if err != nil {
		return Site{}, fmt.Errorf("cannot decode the instruction (bytes % x): %v", code[:min(len(code), 8)], err)
	}
	s := Site{
		Addr:          addr,
		Orig:          append([]byte(nil), code[:inst.Len]...),
		Len:           inst.Len,
		RIPRelDispOff: -1,
		Inst:          inst,
	}
	text := x86asm.GNUSyntax(inst, addr, nil)
	refuse := func(why string) error { return fmt.Errorf("cannot probe %q (% x): %s", text, s.Orig, why) }
	if why := refusal(inst, s.Orig); why != "" {
		return Site{}, refuse(why)
	}
	s.Branch = branchKind(inst.Op)
	rel := false
	for _, a := range inst.Args {
		if r, ok := a.(x86asm.Rel); ok {
			rel = true
			s.Target = addr + uint64(inst.Len) + uint64(int64(r))
		}
	}
	dispOff, eip, err := ripOperand(inst, s.Orig)
	switch {
	case err != nil:
		return Site{}, refuse(err.Error())
	case eip:
		return Site{}, refuse("its address-size prefix (0x67) makes its operand EIP-relative")
	case rel && s.Branch == BranchNone:
		return Site{}, refuse("its relative operand would have to be relocated, and the VMM relocates only branches")
	case s.Branch == BranchOther && inst.AddrSize != 64:
		return Site{}, refuse(fmt.Sprintf("its address-size prefix (0x67) makes it count with the %d-bit ecx", inst.AddrSize))
	case s.Branch != BranchNone && s.Branch != BranchRet && inst.DataSize == 16:
		return Site{}, refuse("its operand-size prefix (0x66) truncates the target to 16 bits on AMD but not on Intel")
	}
	s.Indirect = (s.Branch == BranchCall || s.Branch == BranchJmp) && !rel
	s.RIPRelDispOff = dispOff
	return s, nil
}

// decode decodes one 64-bit instruction. The decoder reports some invalid
// encodings as a lone prefix with no opcode; those are errors here.
func decode(code []byte) (x86asm.Inst, error) {
	inst, err := x86asm.Decode(code, 64)
	if err == nil && inst.Op == 0 {
		err = fmt.Errorf("invalid instruction")
	}
	return inst, err
}

// refusal says why inst cannot be probed, or "".
func refusal(inst x86asm.Inst, b []byte) string {
	switch inst.Op {
	case x86asm.INT:
		if b[0] == 0xCC || len(inst.Args) > 0 && inst.Args[0] == x86asm.Imm(3) {
			return "int3 is already a breakpoint (the guest's own); a probe would hide it"
		}
		return "int n enters the guest kernel, whose trap frame would hold the out-of-line address"
	case x86asm.ICEBP, x86asm.INTO:
		return "it traps into the guest kernel, whose trap frame would hold the out-of-line address"
	case x86asm.UD2:
		return "ud2 is the guest kit's system call: the kernel decodes the instruction at the trapping rip and returns past it"
	case x86asm.UD0, x86asm.UD1:
		return "it raises #UD, whose trap frame would hold the out-of-line address"
	case x86asm.SYSCALL, x86asm.SYSENTER:
		return "a system call would hand the kernel (in rcx) the out-of-line address to return to"
	case x86asm.SYSEXIT, x86asm.SYSRET, x86asm.IRET, x86asm.IRETD, x86asm.IRETQ,
		x86asm.LCALL, x86asm.LJMP, x86asm.LRET:
		return "far control transfers (iret, sysret, lcall, ljmp, lret) are not handled"
	case x86asm.HLT:
		return "the interrupt that ends hlt would push the out-of-line address"
	case x86asm.XBEGIN:
		return "xbegin's abort target is relative and its transaction would span the out-of-line copy"
	}
	if inst.AddrSize == 16 {
		return "16-bit addressing"
	}
	return ""
}

func branchKind(op x86asm.Op) BranchKind {
	switch op {
	case x86asm.CALL:
		return BranchCall
	case x86asm.JMP:
		return BranchJmp
	case x86asm.RET:
		return BranchRet
	case x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE, x86asm.JRCXZ, x86asm.JECXZ, x86asm.JCXZ:
		return BranchOther
	}
	if _, ok := jccCond[op]; ok {
		return BranchJcc
	}
	return BranchNone
}

// ripOperand finds inst's RIP-relative memory operand: the offset in b of
// its 32-bit displacement (-1 if there is none) and whether a 0x67 prefix
// makes it EIP-relative. A RIP-relative operand is ModRM mod=00 rm=101
// followed by disp32 (never a SIB). The decoder knows where that is for
// legacy encodings (PCRelOff), which is checked by re-decoding; its
// VEX/EVEX decoder reports such an operand as an absolute address, so for
// those the ModRM byte is read here.
func ripOperand(inst x86asm.Inst, b []byte) (off int, eip bool, err error) {
	for _, p := range inst.Prefix {
		if p.IsVEX() || p.IsEVEX() {
			return vexRIPOperand(inst, b)
		}
	}
	m, ok := ripMem(inst)
	if !ok {
		return -1, false, nil
	}
	var cands []int
	if inst.PCRel == 4 && inst.PCRelOff > 0 {
		cands = append(cands, inst.PCRelOff)
	}
	for k := 1; k+4 <= len(b); k++ {
		cands = append(cands, k)
	}
	for _, k := range cands {
		if k+4 <= len(b) && binary.LittleEndian.Uint32(b[k:]) == uint32(m.Disp) && dispAt(inst, b, k) {
			return k, m.Base == x86asm.EIP, nil
		}
	}
	return -1, false, fmt.Errorf("cannot locate its RIP-relative displacement %#x in the encoding", uint32(m.Disp))
}

func ripMem(inst x86asm.Inst) (x86asm.Mem, bool) {
	for _, a := range inst.Args {
		if m, ok := a.(x86asm.Mem); ok && (m.Base == x86asm.RIP || m.Base == x86asm.EIP) {
			return m, true
		}
	}
	return x86asm.Mem{}, false
}

// dispAt checks that b[k:k+4] is inst's displacement by re-decoding with
// those bytes changed: the displacement, and nothing else, must change.
func dispAt(inst x86asm.Inst, b []byte, k int) bool {
	for _, delta := range []uint32{0x01020304, 0x80706050} {
		c := append([]byte(nil), b...)
		v := binary.LittleEndian.Uint32(c[k:]) ^ delta
		binary.LittleEndian.PutUint32(c[k:], v)
		got, err := decode(c)
		if err != nil || got.Op != inst.Op || got.Len != inst.Len {
			return false
		}
		m, ok := ripMem(got)
		if !ok || uint32(m.Disp) != v {
			return false
		}
		for i, a := range got.Args {
			if gm, ok := a.(x86asm.Mem); ok && gm.Base == m.Base {
				om, ok := inst.Args[i].(x86asm.Mem)
				if !ok {
					return false
				}
				gm.Disp = om.Disp
				got.Args[i] = gm
			}
		}
		if got.Args != inst.Args {
			return false
		}
	}
	return true
}

// vexRIPOperand reads the ModRM byte of a VEX/EVEX instruction, which
// follows the prefix (2, 3 or 4 bytes) and one opcode byte.
func vexRIPOperand(inst x86asm.Inst, b []byte) (int, bool, error) {
	hasMem := false
	for _, a := range inst.Args {
		_, ok := a.(x86asm.Mem)
		hasMem = hasMem || ok
	}
	if !hasMem {
		return -1, false, nil
	}
	p, addr32 := 0, false
	for p < len(b) && isLegacyPrefix(b[p]) {
		addr32 = addr32 || b[p] == 0x67
		p++
	}
	var modrm int
	switch {
	case p < len(b) && b[p] == 0xC5:
		modrm = p + 3
	case p < len(b) && b[p] == 0xC4:
		modrm = p + 4
	case p < len(b) && b[p] == 0x62:
		modrm = p + 5
	default:
		return -1, false, fmt.Errorf("cannot find its VEX/EVEX prefix")
	}
	if modrm >= inst.Len {
		return -1, false, fmt.Errorf("cannot find its ModRM byte")
	}
	if b[modrm]>>6 != 0 || b[modrm]&7 != 5 {
		return -1, false, nil
	}
	if modrm+5 > inst.Len {
		return -1, false, fmt.Errorf("its RIP-relative displacement runs past the instruction")
	}
	return modrm + 1, addr32, nil
}

func isLegacyPrefix(c byte) bool {
	switch c {
	case 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, 0x66, 0x67, 0xf0, 0xf2, 0xf3:
		return true
	}
	return false
}
