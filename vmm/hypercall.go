package vmm

import (
	"encoding/binary"
	"fmt"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
)

// hcError is what an unknown hypercall returns in rax.
const hcError = ^uint64(0)

// MaxMarkIDs bounds the HC_MARK ids a guest can have timestamped: the VMM
// keeps the latest mark of each id, and a mark of one id more is dropped
// and answered with hcError, so a guest cannot grow host memory with marks.
const MaxMarkIDs = abi.MarkMaxIDs

// hypercall serves an OUT to abi.PortHcall: the number is the value
// written, arguments are in rdi, rsi and r8 (read from the registers KVM
// synced into kvm_run at this exit), and the result goes back in rax.
func (m *Machine) hypercall() error {
	m.stats.Hypercalls++
	io := m.cpu.IOExit()
	nr := uint32(0)
	for i := io.Size - 1; i >= 0; i-- {
		nr = nr<<8 | uint32(io.Data[i])
	}
	regs := m.cpu.SyncedRegs()
	switch nr {
	case abi.HcTime:
		now, err := m.eng.Clock()
		if err != nil {
			return err
		}
		regs.RAX = uint64(now)
	case abi.HcMark:
		if _, ok := m.marks[regs.RDI]; !ok && len(m.marks) >= MaxMarkIDs {
			m.stats.MarksDropped++
			regs.RAX = hcError
			break
		}
		m.marks[regs.RDI] = m.Now()
		return nil
	case abi.HcFault:
		return m.guestReportedFault(regs.RDI, regs.RSI, regs.R8)
	case abi.HcBreakpoint:
		handled, err := m.breakpoint(regs.RSI)
		if err != nil {
			return err
		}
		regs.RAX = 0
		if !handled {
			regs.RAX = hcError // the guest's own int3: its kernel reports it
		}
	default:
		regs.RAX = hcError
	}
	m.cpu.MarkRegsDirty()
	return nil
}

// exceptionNames are the architectural exception mnemonics.
var exceptionNames = [...]string{
	"#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM", "#DF", "CSO", "#TS", "#NP", "#SS",
	"#GP", "#PF", "15", "#MF", "#AC", "#MC", "#XM", "#VE", "#CP",
}

// ExceptionName is the mnemonic of exception vector v ("#PF").
func ExceptionName(v uint64) string {
	if v < uint64(len(exceptionNames)) {
		return exceptionNames[v]
	}
	return fmt.Sprintf("vector %d", v)
}

// guestReportedFault turns REPRISE_HC_FAULT into a *GuestFault carrying the
// faulting context's registers, read from the frame the guest passed. The
// frame address is guest-controlled: it is bounds-checked like any other.
func (m *Machine) guestReportedFault(vector, frameGPA, cr2 uint64) error {
	raw, err := m.ram.Slice(frameGPA, abi.FrameSize)
	if err != nil {
		return m.fault(fmt.Sprintf("guest reported exception %s with an invalid frame address: %v", ExceptionName(vector), err))
	}
	f := frameOf(raw)
	return m.Trap(fmt.Sprintf("the guest kernel reported an unhandled %s (error code %#x) at CPL%d", ExceptionName(vector), f.Error, f.CS&3),
		int(vector), frameRegs(f), uint16(f.CS), cr2)
}

// breakpoint serves REPRISE_HC_BREAKPOINT for the trap frame at frameGPA:
// the engine sees the trapped registers and says where they resume.
func (m *Machine) breakpoint(frameGPA uint64) (bool, error) {
	raw, err := m.ram.Slice(frameGPA, abi.FrameSize)
	if err != nil {
		return false, nil
	}
	regs := FrameRegs(raw)
	resume, ok, err := m.eng.Breakpoint(&regs)
	if !ok || err != nil {
		return ok, err
	}
	binary.LittleEndian.PutUint64(raw[abi.FrameRIP:], resume)
	return true, nil
}

// probeExit serves an out to abi.PortProbe: a probe site patched to exit
// straight from CPL3. The engine sees a copy of the registers (it must
// not change the guest's) and says where the code resumes; an out that is
// not the engine's does nothing, as a write to an unused port. Setting
// RIP also keeps KVM from completing the out at the next entry (it skips
// the instruction only if RIP still points at it).
func (m *Machine) probeExit() error {
	regs := m.cpu.SyncedRegs()
	hit := *regs
	resume, ok, err := m.eng.ProbeExit(&hit)
	if !ok || err != nil {
		return err
	}
	regs.RIP = resume
	m.cpu.MarkRegsDirty()
	return nil
}

// FrameRegs are the user registers the guest kernel's trap frame raw (a
// struct reprise_frame, abi.FrameSize bytes) holds.
func FrameRegs(raw []byte) kvm.Regs { return frameRegs(frameOf(raw)) }

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
