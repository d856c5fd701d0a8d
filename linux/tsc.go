package linux

import (
	"fmt"

	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/kvm"
)

// The dynamic loader reads the time-stamp counter as it starts (glibc's
// rtld timing, kept in its memory whether or not anyone asks for it).
// RDTSC runs natively in user mode on the hosts reprise is tested on and
// cannot be trapped there, so the loader's RDTSCs are replaced, as it is
// loaded, with UD2: each traps, and the kernel answers from the machine's
// recorded clock and resumes after it. The loader's code is decoded
// instruction by instruction from its .text section, so only real RDTSCs
// are touched.

// ud2 replaces an RDTSC (both are two bytes).
var ud2 = [2]byte{0x0F, 0x0B}

// patchTSC replaces the RDTSCs in x's .text, loaded in as.
func patchTSC(as *addressSpace, x *executable) error {
	start, end := x.text[0], x.text[1]
	if start == 0 || end <= start || end-start > 64<<20 {
		return fmt.Errorf("no .text section to patch")
	}
	code := make([]byte, end-start)
	if err := as.read(start, code); err != nil {
		return err
	}
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			off++
			continue
		}
		if inst.Op == x86asm.RDTSC {
			addr := start + uint64(off)
			if err := as.load(addr, ud2[:]); err != nil {
				return err
			}
			as.tscSites[addr] = true
		}
		off += inst.Len
	}
	return nil
}

// emulateTSC answers a patched RDTSC that trapped at rip with the clock,
// in EDX:EAX, and resumes after it (the trap frame's RIP, past the vector
// and error code at the stub's RSP).
func (k *Kernel) emulateTSC(regs *kvm.Regs, rip uint64) error {
	t, err := k.m.Clock()
	if err != nil {
		return err
	}
	regs.RAX, regs.RDX = uint64(t)&0xffffffff, uint64(t)>>32
	k.m.VCPU().MarkRegsDirty()
	return k.m.RAM().PutUint64(regs.RSP+16, rip+2)
}
