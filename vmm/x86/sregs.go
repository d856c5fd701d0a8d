package x86

import (
	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
)

// Control-register bits.
const (
	CR0PE = 1 << 0
	CR0MP = 1 << 1
	CR0ET = 1 << 4
	CR0NE = 1 << 5
	CR0WP = 1 << 16
	CR0AM = 1 << 18
	CR0PG = 1 << 31

	CR4PAE        = 1 << 5
	CR4OSFXSR     = 1 << 9
	CR4OSXMMEXCPT = 1 << 10
	CR4OSXSAVE    = 1 << 18

	EFERSCE = 1 << 0
	EFERLME = 1 << 8
	EFERLMA = 1 << 10

	RFLAGSReserved = 1 << 1
	RFLAGSTF       = 1 << 8 // the trap flag: a #DB after the next instruction
	RFLAGSIF       = 1 << 9
	RFLAGSRF       = 1 << 16 // the resume flag: no instruction breakpoint at the next instruction
	RFLAGSPF       = 1 << 2
	RFLAGSZF       = 1 << 6
	// RFLAGSArith are the flags arithmetic sets: CF, PF, AF, ZF, SF, OF.
	RFLAGSArith = 1<<0 | 1<<2 | 1<<4 | 1<<6 | 1<<7 | 1<<11
)

func segment(sel uint16, code bool, dpl uint8) kvm.Segment {
	s := kvm.Segment{Base: 0, Limit: 0xffffffff, Selector: sel, Present: 1, DPL: dpl, S: 1, G: 1}
	if code {
		s.Type, s.L = 0xb, 1 // execute/read, accessed; 64-bit
	} else {
		s.Type, s.DB = 0x3, 1 // read/write, accessed
	}
	return s
}

// LongModeSregs returns s with everything set for 64-bit CPL0 execution on
// the tables the Build* functions wrote. CR0.WP is on so the kernel cannot
// write read-only pages either.
func LongModeSregs(s kvm.Sregs) kvm.Sregs {
	s.CS = segment(abi.SelKernelCode, true, 0)
	data := segment(abi.SelKernelData, false, 0)
	s.DS, s.ES, s.FS, s.GS, s.SS = data, data, data, data, data
	s.TR = kvm.Segment{Base: abi.TSS, Limit: tssLimit, Selector: abi.SelTSS, Type: 0xb, Present: 1} // busy 64-bit TSS
	s.LDT = kvm.Segment{Unusable: 1}
	s.GDT = kvm.DTable{Base: abi.GDT, Limit: gdtLimit}
	s.IDT = kvm.DTable{Base: abi.IDT, Limit: idtLimit}
	s.CR0 = CR0PE | CR0MP | CR0ET | CR0NE | CR0WP | CR0AM | CR0PG
	s.CR3 = abi.PML4
	s.CR4 = CR4PAE | CR4OSFXSR | CR4OSXMMEXCPT
	s.EFER = EFERLME | EFERLMA
	return s
}

// EntryRegs are the general registers at the kernel's entry point: boot
// stack, boot-info pointer in rdi, interrupts off.
func EntryRegs(entry uint64) kvm.Regs {
	return kvm.Regs{RIP: entry, RSP: abi.BootStackTop, RDI: abi.BootInfo, RFLAGS: RFLAGSReserved}
}

// UserModeSregs returns s set for 64-bit CPL3 execution on the same
// tables, with SYSCALL enabled: the entry state of a program whose kernel
// the VMM plays (package linux). FS and GS are user data segments whose
// bases the program sets (arch_prctl).
func UserModeSregs(s kvm.Sregs) kvm.Sregs {
	s = LongModeSregs(s)
	s.CS = segment(abi.SelUserCode, true, 3)
	data := segment(abi.SelUserData, false, 3)
	s.DS, s.ES, s.FS, s.GS, s.SS = data, data, data, data, data
	s.EFER |= EFERSCE
	return s
}
