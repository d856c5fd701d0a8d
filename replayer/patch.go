package replayer

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elfimage"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/probes"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/memory"
	"github.com/reprise-vm/reprise/vmm/x86"
)

// ProbeHit is one hit of a probe site: where, in which state, and when the
// recorded run was there.
type ProbeHit struct {
	Addr uint64
	Regs *kvm.Regs // the interrupted user-mode registers (RIP = Addr); valid during the call
	Pos  vmm.Position
	Time time.Duration // record-time host time of the last event before it
}

// ProbeHandler is called at every probe hit with the guest's memory. It
// must not change guest state.
type ProbeHandler func(h *ProbeHit, mem vmm.GuestMemory) error

// A hit: the guest's int3 traps to its kernel, whose #BP handler (on its
// own IST stack) forwards the trap frame with REPRISE_HC_BREAKPOINT. The
// engine reports the hit and resumes the frame at the instruction's
// out-of-line copy in the probe area — followed by a jump back.
// Afterwards the guest's registers and memory are exactly what executing
// the instruction in place gives; only the int3 bytes, the copies and the
// kernel's #BP stack differ, and the engine restores all three before the
// machine hashes RAM at the end (DESIGN.md §7). The recorded run never had
// them: probes cost only the replays that use them.
const trampolineSlot = 32

// patches are the probe sites of one replay, patched into guest memory.
type patches struct {
	sites  []probes.Site
	onHit  ProbeHandler
	placed map[uint64]*patch // by site address
}

type patch struct {
	site  *probes.Site
	tramp uint64 // the out-of-line copy
}

// install patches the sites and writes their out-of-line copies.
func (ps *patches) install(ram *memory.RAM, img *elfimage.Image) error {
	if len(ps.sites)*trampolineSlot > abi.ProbeAreaSize {
		return fmt.Errorf("replayer: %d probe sites do not fit the probe area (at most %d)", len(ps.sites), abi.ProbeAreaSize/trampolineSlot)
	}
	ps.placed = make(map[uint64]*patch, len(ps.sites))
	for i := range ps.sites {
		s := &ps.sites[i]
		if _, dup := ps.placed[s.Addr]; dup {
			return fmt.Errorf("replayer: two probe sites at %#x", s.Addr)
		}
		if s.Addr < abi.UserBase {
			return fmt.Errorf("replayer: probe site %#x (%s) is in the guest kernel: only user code can be probed (the kernel's #BP path would recurse)", s.Addr, img.Describe(s.Addr))
		}
		cur, err := ram.Slice(s.Addr, uint64(len(s.Orig)))
		if err != nil || len(s.Orig) == 0 || string(cur) != string(s.Orig) {
			return fmt.Errorf("replayer: probe site %#x (%s): guest memory does not hold the expected instruction %x", s.Addr, img.Describe(s.Addr), s.Orig)
		}
		p := &patch{site: s, tramp: abi.ProbeArea + uint64(i)*trampolineSlot}
		code, err := p.outOfLine()
		if err != nil {
			return fmt.Errorf("replayer: probe site %#x (%s): %w", s.Addr, img.Describe(s.Addr), err)
		}
		if err := ram.Write(p.tramp, code); err != nil {
			return err
		}
		cur[0] = 0xCC // int3
		ps.placed[s.Addr] = p
	}
	return nil
}

// outOfLine is the code that stands for the instruction at p.tramp: the
// instruction itself with its RIP-relative displacement adjusted, then a
// jump back; relative calls and jumps are rewritten into equivalents that
// reach the same targets with the same return address. It relies on the
// decoder's classification (Branch, Indirect, Target, Cond), never on
// opcode bytes, so prefixed forms are handled too.
func (p *patch) outOfLine() ([]byte, error) {
	s := p.site
	o, n := s.Orig, uint64(len(s.Orig))
	next := s.Addr + n // where execution continues in place
	var code []byte
	jmp := func(at, to uint64) ([]byte, error) { // jmp rel32 from code offset at
		d := int64(to) - int64(p.tramp+at+5)
		if d != int64(int32(d)) {
			return nil, fmt.Errorf("target %#x out of rel32 reach", to)
		}
		b := []byte{0xE9, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(b[1:], uint32(int32(d)))
		return b, nil
	}
	switch {
	case s.Branch == probes.BranchCall && s.Indirect:
		return nil, fmt.Errorf("an indirect call cannot be probed yet (its return address would be the out-of-line copy's)")
	case s.Branch == probes.BranchCall: // push the in-place return address, jump to the target
		if next >= 1<<31 {
			return nil, fmt.Errorf("return address %#x does not fit push imm32", next)
		}
		code = []byte{0x68, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(code[1:], uint32(next))
		j, err := jmp(5, s.Target)
		if err != nil {
			return nil, err
		}
		code = append(code, j...)
	case s.Branch == probes.BranchJmp && !s.Indirect:
		j, err := jmp(0, s.Target)
		if err != nil {
			return nil, err
		}
		code = j
	case s.Branch == probes.BranchJcc: // jcc.rel32 to the taken jump (offset 11); fall through: back
		cc, ok := s.Cond()
		if !ok {
			return nil, fmt.Errorf("conditional jump %x with no condition code", o)
		}
		code = []byte{0x0F, 0x80 | cc&0x0F, 5, 0, 0, 0}
		back, err := jmp(6, next)
		if err != nil {
			return nil, err
		}
		taken, err := jmp(11, s.Target)
		if err != nil {
			return nil, err
		}
		code = append(append(code, back...), taken...)
	case s.Branch == probes.BranchOther: // loop*/jrcxz: the instruction itself, its rel8 skipping the jump back
		code = append([]byte(nil), o...)
		code[n-1] = 5
		back, err := jmp(n, next)
		if err != nil {
			return nil, err
		}
		taken, err := jmp(n+5, s.Target)
		if err != nil {
			return nil, err
		}
		code = append(append(code, back...), taken...)
	default: // none, ret, indirect jmp: the instruction itself, then back
		code = append([]byte(nil), o...)
		if off := s.RIPRelDispOff; off >= 0 {
			if off+4 > len(o) {
				return nil, fmt.Errorf("RIP-relative displacement at offset %d is outside the instruction", off)
			}
			target := int64(next) + int64(int32(binary.LittleEndian.Uint32(o[off:])))
			d := target - int64(p.tramp+n)
			if d != int64(int32(d)) {
				return nil, fmt.Errorf("RIP-relative operand %#x out of reach of the probe area", target)
			}
			binary.LittleEndian.PutUint32(code[off:], uint32(int32(d)))
		}
		j, err := jmp(n, next)
		if err != nil {
			return nil, err
		}
		code = append(code, j...)
	}
	if len(code) > trampolineSlot {
		return nil, fmt.Errorf("instruction of %d bytes does not fit a %d-byte slot", n, trampolineSlot)
	}
	return code, nil
}

// hit reports a probe hit at the trapped registers regs (RIP past the
// int3) and returns where the trapped code resumes: the out-of-line copy.
// An int3 at no site is the guest's own.
func (ps *patches) hit(m *vmm.Machine, regs *kvm.Regs, recordTime func(vmm.Position) time.Duration) (uint64, bool, error) {
	p, ok := ps.placed[regs.RIP-1]
	if !ok {
		return 0, false, nil
	}
	m.Stats().ProbeHits++
	if ps.onHit != nil {
		regs.RIP = p.site.Addr
		pos := m.Position()
		h := &ProbeHit{Addr: p.site.Addr, Regs: regs, Pos: pos, Time: recordTime(pos)}
		if err := ps.onHit(h, m); err != nil {
			return 0, true, err
		}
	}
	return p.tramp, true, nil
}

// remove puts back every byte probes changed: the patched instructions,
// the out-of-line copies, the kernel's #BP stack, which the recorded run
// never used, and the accessed/dirty bits the CPU set in the page-table
// entries of those two areas.
func (ps *patches) remove(ram *memory.RAM) error {
	if len(ps.placed) == 0 {
		return nil
	}
	for _, p := range ps.placed {
		if err := ram.Write(p.site.Addr, p.site.Orig); err != nil {
			return err
		}
	}
	for _, r := range [][2]uint64{{abi.ProbeArea, abi.ProbeAreaSize}, {abi.IST2Top - ist2Size, ist2Size}} {
		b, err := ram.Slice(r[0], r[1])
		if err != nil {
			return err
		}
		clear(b)
		// The CPU marked their page-table entries accessed (and dirty).
		if err := x86.ClearAccessed(ram, r[0], r[0]+r[1]); err != nil {
			return err
		}
	}
	return nil
}

// ist2Size is the #BP stack below abi.IST2Top (abi.h: IST2 sits above IST1).
const ist2Size = abi.IST2Top - abi.IST1Top
