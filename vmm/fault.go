package vmm

import (
	"fmt"
	"strings"

	"github.com/reprise-vm/reprise/kvm"
)

// GuestFault is a guest that cannot go on: a triple fault, an exit the VMM
// does not handle, or an exception the guest kernel reported. It carries
// enough to start debugging without a rerun.
type GuestFault struct {
	Reason     string
	ExitReason kvm.ExitReason
	Vector     int // exception vector the guest reported, or -1
	Regs       kvm.Regs
	Sregs      kvm.Sregs
	Where      func(addr uint64) string // symbolizer
	Console    []string                 // the last console lines
}

// newFault captures the current vCPU state. Registers come from the copy
// KVM synced into kvm_run at this exit; if that is unavailable they are
// fetched with ioctls.
func (m *Machine) newFault(reason string) *GuestFault {
	f := &GuestFault{Reason: reason, ExitReason: m.cpu.ExitReason(), Vector: -1}
	if m.cfg.Image != nil {
		f.Where = m.cfg.Image.Describe
	}
	f.Regs = *m.cpu.SyncedRegs()
	f.Sregs = *m.cpu.SyncedSregs()
	if f.Regs == (kvm.Regs{}) {
		f.Regs, _ = m.cpu.Regs()
		f.Sregs, _ = m.cpu.Sregs()
	}
	m.console.Flush()
	f.Console = m.console.Tail()
	return f
}

func (m *Machine) fault(reason string) error { return m.newFault(reason) }

// Trap is the report of an exception the guest's kernel could not handle
// — the kit kernel's, or a Kernel's: regs and cs are the faulting
// context's, cr2 the faulting address of a page fault.
func (m *Machine) Trap(reason string, vector int, regs kvm.Regs, cs uint16, cr2 uint64) *GuestFault {
	gf := m.newFault(reason)
	gf.Regs = regs
	gf.Sregs.CR2 = cr2
	gf.Sregs.CS.Selector = cs
	gf.Vector = vector
	return gf
}

func (f *GuestFault) Error() string {
	var b strings.Builder
	r := &f.Regs
	fmt.Fprintf(&b, "guest fault: %s\n", f.Reason)
	if f.Vector >= 0 {
		fmt.Fprintf(&b, "  faulting context: rip %#x", r.RIP)
	} else {
		fmt.Fprintf(&b, "  exit %v, rip %#x", f.ExitReason, r.RIP)
	}
	if f.Where != nil {
		fmt.Fprintf(&b, " (%s)", f.Where(r.RIP))
	}
	fmt.Fprintf(&b, ", CPL%d\n", f.Sregs.CS.Selector&3)
	fmt.Fprintf(&b, "  rax %016x rbx %016x rcx %016x rdx %016x\n", r.RAX, r.RBX, r.RCX, r.RDX)
	fmt.Fprintf(&b, "  rsi %016x rdi %016x rbp %016x rsp %016x\n", r.RSI, r.RDI, r.RBP, r.RSP)
	fmt.Fprintf(&b, "  r8  %016x r9  %016x r10 %016x r11 %016x\n", r.R8, r.R9, r.R10, r.R11)
	fmt.Fprintf(&b, "  r12 %016x r13 %016x r14 %016x r15 %016x\n", r.R12, r.R13, r.R14, r.R15)
	s := &f.Sregs
	fmt.Fprintf(&b, "  rflags %#x cr0 %#x cr2 %#x cr3 %#x cr4 %#x efer %#x\n", r.RFLAGS, s.CR0, s.CR2, s.CR3, s.CR4, s.EFER)
	if len(f.Console) > 0 {
		fmt.Fprintf(&b, "  last console lines:\n")
		for _, l := range f.Console {
			fmt.Fprintf(&b, "    | %s\n", l)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
