package vmm

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/vmm/x86"
)

// ProbeSite is an instruction a replay patches with int3 (DESIGN.md §7),
// as decoded by package probes. The recorded run never had it: probes cost
// only the replays that use them.
type ProbeSite struct {
	Addr uint64 // guest-virtual (identity-mapped) address of the instruction
	Orig []byte // its bytes, checked against guest memory at install
	// RIPRel is the offset in Orig of a RIP-relative 32-bit displacement,
	// or -1.
	RIPRel int
	Branch Branch // how the instruction transfers control
	Target uint64 // a relative branch's destination
	Cond   uint8  // BranchJcc: the condition code (low nibble of 0x7x)
}

// Branch classifies a probed instruction's control transfer.
type Branch uint8

const (
	BranchNone         Branch = iota // falls through
	BranchCall                       // relative call
	BranchJmp                        // relative jmp
	BranchJcc                        // conditional jump on the flags
	BranchLoop                       // loop*/jrcxz: rel8, conditional on rcx
	BranchRet                        // ret: copied as is
	BranchIndirectJmp                // jmp through a register or memory: copied as is
	BranchIndirectCall               // refused: its pushed return address would be the copy's
)

// GuestMemory reads guest-virtual memory (through the guest's page tables).
type GuestMemory interface {
	ReadVirt(gva uint64, b []byte) error
}

// ProbeHit is one probe hit: where, in which state, and when the recorded
// run was there.
type ProbeHit struct {
	Addr uint64
	Regs kvm.Regs // the interrupted user-mode registers (RIP = Addr)
	Pos  Position
	Time time.Duration // record-time host time of the last event before it
}

// ProbeHandler is called at every probe hit with the guest's memory. It
// must not change guest state.
type ProbeHandler func(h *ProbeHit, mem GuestMemory) error

// A hit: the guest's int3 traps to its kernel, whose #BP handler (on its
// own IST stack) forwards the trap frame with REPRISE_HC_BREAKPOINT. The
// VMM reports the hit, points the frame's RIP at the instruction's
// out-of-line copy in the probe area — followed by a jump back — and the
// kernel resumes the frame. Afterwards the guest's registers and memory
// are exactly what executing the instruction in place gives; only the
// int3 bytes, the copies and the kernel's #BP stack differ, and the
// machine restores all three before it hashes RAM at the end.
const trampolineSlot = 32

type installedProbe struct {
	ProbeSite
	tramp uint64
}

// installProbes patches the sites and writes their out-of-line copies.
func (m *Machine) installProbes() error {
	if len(m.cfg.Probes) == 0 {
		return nil
	}
	if m.cfg.Mode != Replay {
		return fmt.Errorf("vmm: probes are for replays only: the recorded run must not pay for them")
	}
	if len(m.cfg.Probes)*trampolineSlot > abi.ProbeAreaSize {
		return fmt.Errorf("vmm: %d probe sites do not fit the probe area (at most %d)", len(m.cfg.Probes), abi.ProbeAreaSize/trampolineSlot)
	}
	m.probes = make(map[uint64]*installedProbe, len(m.cfg.Probes))
	for i, s := range m.cfg.Probes {
		if _, dup := m.probes[s.Addr]; dup {
			return fmt.Errorf("vmm: two probe sites at %#x", s.Addr)
		}
		if s.Addr < abi.UserBase {
			return fmt.Errorf("vmm: probe site %#x (%s) is in the guest kernel: only user code can be probed (the kernel's #BP path would recurse)", s.Addr, m.cfg.Image.Describe(s.Addr))
		}
		cur, err := m.ram.Slice(s.Addr, uint64(len(s.Orig)))
		if err != nil || len(s.Orig) == 0 || string(cur) != string(s.Orig) {
			return fmt.Errorf("vmm: probe site %#x (%s): guest memory does not hold the expected instruction %x", s.Addr, m.cfg.Image.Describe(s.Addr), s.Orig)
		}
		p := &installedProbe{ProbeSite: s, tramp: abi.ProbeArea + uint64(i)*trampolineSlot}
		code, err := p.outOfLine()
		if err != nil {
			return fmt.Errorf("vmm: probe site %#x (%s): %w", s.Addr, m.cfg.Image.Describe(s.Addr), err)
		}
		if err := m.ram.Write(p.tramp, code); err != nil {
			return err
		}
		cur[0] = 0xCC // int3
		m.probes[s.Addr] = p
	}
	return nil
}

// outOfLine is the code that stands for the instruction at p.tramp: the
// instruction itself with its RIP-relative displacement adjusted, then a
// jump back; relative calls and jumps are rewritten into equivalents that
// reach the same targets with the same return address. It relies on the
// decoder's classification (Branch, Target, Cond), never on opcode bytes,
// so prefixed forms are handled too.
func (p *installedProbe) outOfLine() ([]byte, error) {
	o, n := p.Orig, uint64(len(p.Orig))
	next := p.Addr + n // where execution continues in place
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
	switch p.Branch {
	case BranchCall: // push the in-place return address, jump to the target
		if next >= 1<<31 {
			return nil, fmt.Errorf("return address %#x does not fit push imm32", next)
		}
		code = []byte{0x68, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(code[1:], uint32(next))
		j, err := jmp(5, p.Target)
		if err != nil {
			return nil, err
		}
		code = append(code, j...)
	case BranchJmp:
		j, err := jmp(0, p.Target)
		if err != nil {
			return nil, err
		}
		code = j
	case BranchJcc: // jcc.rel32 to the taken jump (offset 11); fall through: back
		code = []byte{0x0F, 0x80 | p.Cond&0x0F, 5, 0, 0, 0}
		back, err := jmp(6, next)
		if err != nil {
			return nil, err
		}
		taken, err := jmp(11, p.Target)
		if err != nil {
			return nil, err
		}
		code = append(append(code, back...), taken...)
	case BranchLoop: // the instruction itself, its rel8 skipping the jump back
		code = append([]byte(nil), o...)
		code[n-1] = 5
		back, err := jmp(n, next)
		if err != nil {
			return nil, err
		}
		taken, err := jmp(n+5, p.Target)
		if err != nil {
			return nil, err
		}
		code = append(append(code, back...), taken...)
	case BranchIndirectCall:
		return nil, fmt.Errorf("an indirect call cannot be probed yet (its return address would be the out-of-line copy's)")
	default: // none, ret, indirect jmp: the instruction itself, then back
		code = append([]byte(nil), o...)
		if p.RIPRel >= 0 {
			if p.RIPRel+4 > len(o) {
				return nil, fmt.Errorf("RIP-relative displacement at offset %d is outside the instruction", p.RIPRel)
			}
			target := int64(next) + int64(int32(binary.LittleEndian.Uint32(o[p.RIPRel:])))
			d := target - int64(p.tramp+n)
			if d != int64(int32(d)) {
				return nil, fmt.Errorf("RIP-relative operand %#x out of reach of the probe area", target)
			}
			binary.LittleEndian.PutUint32(code[p.RIPRel:], uint32(int32(d)))
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

// probeHit serves REPRISE_HC_BREAKPOINT for the trap frame at frameGPA:
// it reports the hit and redirects the frame to the out-of-line copy. It
// returns false for an int3 that is not a probe's (the guest's own).
func (m *Machine) probeHit(frameGPA uint64) (bool, error) {
	raw, err := m.ram.Slice(frameGPA, abi.FrameSize)
	if err != nil {
		return false, nil
	}
	f := frameOf(raw)
	p, ok := m.probes[f.RIP-1] // int3 traps: RIP is past it
	if !ok {
		return false, nil
	}
	m.stats.ProbeHits++
	if m.cfg.OnProbe != nil {
		pos := m.position()
		h := &ProbeHit{Addr: p.Addr, Regs: frameRegs(f), Pos: pos, Time: m.recordTime(pos.Branch)}
		h.Regs.RIP = p.Addr
		if err := m.cfg.OnProbe(h, m); err != nil {
			return true, err
		}
	}
	binary.LittleEndian.PutUint64(raw[17*8:], p.tramp) // frame.rip
	return true, nil
}

// removeProbes puts back every byte probes changed: the patched
// instructions, the out-of-line copies, the kernel's #BP stack, which the
// recorded run never used, and the accessed/dirty bits the CPU set in the
// page-table entries of those two areas.
func (m *Machine) removeProbes() error {
	if len(m.probes) == 0 {
		return nil
	}
	for _, p := range m.probes {
		if err := m.ram.Write(p.Addr, p.Orig); err != nil {
			return err
		}
	}
	for _, r := range [][2]uint64{{abi.ProbeArea, abi.ProbeAreaSize}, {abi.IST2Top - ist2Size, ist2Size}} {
		b, err := m.ram.Slice(r[0], r[1])
		if err != nil {
			return err
		}
		clear(b)
		// The CPU marked their page-table entries accessed (and dirty).
		if err := x86.ClearAccessed(m.ram, r[0], r[0]+r[1]); err != nil {
			return err
		}
	}
	return nil
}

// ist2Size is the #BP stack below abi.IST2Top (abi.h: IST2 sits above IST1).
const ist2Size = abi.IST2Top - abi.IST1Top

func frameOf(raw []byte) abi.Frame {
	w := func(i int) uint64 { return binary.LittleEndian.Uint64(raw[i*8:]) }
	return abi.Frame{
		R15: w(0), R14: w(1), R13: w(2), R12: w(3), R11: w(4), R10: w(5), R9: w(6), R8: w(7),
		RBP: w(8), RDI: w(9), RSI: w(10), RDX: w(11), RCX: w(12), RBX: w(13), RAX: w(14),
		Vector: w(15), Error: w(16), RIP: w(17), CS: w(18), RFLAGS: w(19), RSP: w(20), SS: w(21),
	}
}

func frameRegs(f abi.Frame) kvm.Regs {
	return kvm.Regs{
		RAX: f.RAX, RBX: f.RBX, RCX: f.RCX, RDX: f.RDX, RSI: f.RSI, RDI: f.RDI, RSP: f.RSP, RBP: f.RBP,
		R8: f.R8, R9: f.R9, R10: f.R10, R11: f.R11, R12: f.R12, R13: f.R13, R14: f.R14, R15: f.R15,
		RIP: f.RIP, RFLAGS: f.RFLAGS,
	}
}
