package vmm

import (
	"fmt"

	"github.com/reprise-vm/reprise/abi"
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
		now, err := m.src.clock()
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
		m.marks[regs.RDI] = m.now()
		return nil
	case abi.HcFault:
		return m.guestReportedFault(regs.RDI, regs.RSI, regs.R8)
	case abi.HcBreakpoint:
		handled, err := m.probeHit(regs.RSI)
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

func exceptionName(v uint64) string {
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
		return m.fault(fmt.Sprintf("guest reported exception %s with an invalid frame address: %v", exceptionName(vector), err))
	}
	f := frameOf(raw)
	gf := m.newFault(fmt.Sprintf("the guest kernel reported an unhandled %s (error code %#x) at CPL%d", exceptionName(vector), f.Error, f.CS&3))
	gf.Regs = frameRegs(f)
	gf.Sregs.CR2 = cr2
	gf.Sregs.CS.Selector = uint16(f.CS)
	gf.Vector = int(vector)
	return gf
}
