package linux

import (
	"debug/elf"
	"fmt"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm"
)

// A program built with reprise's instrumentation (reprise cc) calls
// BranchCounterHook at every basic block of its own code, counting in the
// page at abi.SWBC, which every address space maps for it; the recorder
// then places interrupts at exact branch counts instead of at system
// calls. The hook is the kit's (guest/lib/swbc.S, where its properties are
// explained), assembled for a program of its own.

// BranchCounterHook is the hook's assembly source.
var BranchCounterHook = fmt.Sprintf(`	.text
	.globl	%[1]s
	.type	%[1]s, @function
%[1]s:
	mov	%#[2]x, %%rax		/* count */
	lea	1(%%rax), %%rax
	mov	%%rax, %#[2]x		/* store first, then compare */
	cmp	%#[3]x, %%rax		/* at the target? */
	je	2f
1:	add	$0, %%rax		/* flags from the count alone */
	ret
2:	out	%%al, $%#[4]x		/* exit: the VMM takes over */
	jmp	1b
	.size	%[1]s, . - %[1]s
	.section .note.GNU-stack, "", @progbits
`, vmm.SWBCHookSymbol, abi.SWBCCountOff, abi.SWBCTargetOff, abi.PortSWBC)

// hookSymbol is the instrumentation hook of an executable: its link-time
// address and size; Found is false for a program without one.
type hookSymbol struct {
	Addr, Size uint64
	Found      bool
}

func branchHook(f *elf.File) hookSymbol {
	syms, err := f.Symbols()
	if err != nil {
		return hookSymbol{} // stripped: no hook to find
	}
	for _, s := range syms {
		if s.Name == vmm.SWBCHookSymbol && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			return hookSymbol{s.Value, s.Size, true}
		}
	}
	return hookSymbol{}
}

// BranchHook is the program's instrumentation hook, at its link-time
// address; ok is false for a program without one.
func (k *Kernel) BranchHook() (addr, size uint64, ok bool) {
	h := k.exe.hook
	return h.Addr, h.Size, h.Found
}

// setBranchHook tells the machine where the program's hook is, if it has
// one: at its link-time address, moved by pieBase for a PIE.
func (k *Kernel) setBranchHook() error {
	h := k.exe.hook
	if !h.Found {
		return nil
	}
	if h.Size == 0 {
		return fmt.Errorf("linux: %s: the %s symbol has no size", k.prog.Path, vmm.SWBCHookSymbol)
	}
	addr := h.Addr
	if k.exe.pie {
		addr += pieBase
	}
	k.m.SetBranchHook(addr, addr+h.Size)
	return nil
}
