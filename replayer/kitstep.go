package replayer

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/kvm"
)

// A kit guest is single-stepped in software: the kit's kernel sends only
// int3s to the VMM (its #DB is fatal), so a step places int3s where the
// instruction can go next and traps at the first the thread reaches. This
// file says where that is.

// successors are the addresses the instruction inst at addr can hand
// control to, in user code, for a thread with registers regs: past it,
// and a branch's target (read from regs and memory for an indirect one,
// the return address for a ret). A ud2 is the kit's system call, from
// which the kernel returns past it.
func successors(inst x86asm.Inst, addr uint64, regs *kvm.Regs, read func(va uint64, p []byte) error) ([]uint64, error) {
	next := addr + uint64(inst.Len)
	switch inst.Op {
	case x86asm.JMP, x86asm.CALL:
		t, err := branchTarget(inst.Args[0], next, regs, read)
		return []uint64{t}, err
	case x86asm.RET:
		var ret [8]byte
		if err := read(regs.RSP, ret[:]); err != nil {
			return nil, fmt.Errorf("ret at %#x: its return address at %#x: %w", addr, regs.RSP, err)
		}
		return []uint64{binary.LittleEndian.Uint64(ret[:])}, nil
	}
	for _, a := range inst.Args {
		if r, ok := a.(x86asm.Rel); ok { // jcc, loop, jrcxz
			if t := next + uint64(int64(r)); t != next {
				return []uint64{next, t}, nil
			}
		}
	}
	return []uint64{next}, nil
}

// branchTarget is where a jmp or call operand a sends control.
func branchTarget(a x86asm.Arg, next uint64, regs *kvm.Regs, read func(va uint64, p []byte) error) (uint64, error) {
	switch a := a.(type) {
	case x86asm.Rel:
		return next + uint64(int64(a)), nil
	case x86asm.Reg:
		v, ok := reg64(a, regs)
		if !ok {
			return 0, fmt.Errorf("branch through register %v", a)
		}
		return v, nil
	case x86asm.Mem:
		if a.Segment != 0 {
			return 0, fmt.Errorf("branch through segment %v", a.Segment)
		}
		va := uint64(a.Disp)
		if a.Base == x86asm.RIP {
			va += next
		} else if a.Base != 0 {
			b, ok := reg64(a.Base, regs)
			if !ok {
				return 0, fmt.Errorf("branch through memory based on %v", a.Base)
			}
			va += b
		}
		if a.Index != 0 {
			i, ok := reg64(a.Index, regs)
			if !ok {
				return 0, fmt.Errorf("branch through memory indexed by %v", a.Index)
			}
			va += i * uint64(a.Scale)
		}
		var t [8]byte
		if err := read(va, t[:]); err != nil {
			return 0, fmt.Errorf("branch target at %#x: %w", va, err)
		}
		return binary.LittleEndian.Uint64(t[:]), nil
	}
	return 0, fmt.Errorf("branch operand %v", a)
}

// reg64 is the value of 64-bit register r in regs.
func reg64(r x86asm.Reg, regs *kvm.Regs) (uint64, bool) {
	all := [...]*uint64{&regs.RAX, &regs.RCX, &regs.RDX, &regs.RBX, &regs.RSP, &regs.RBP, &regs.RSI, &regs.RDI,
		&regs.R8, &regs.R9, &regs.R10, &regs.R11, &regs.R12, &regs.R13, &regs.R14, &regs.R15}
	if r < x86asm.RAX || r > x86asm.R15 {
		return 0, false
	}
	return *all[r-x86asm.RAX], true
}
