package linux

import (
	"golang.org/x/arch/x86/x86asm"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/memory"
	"github.com/reprise-vm/reprise/vmm/x86"
)

// Stale translations. On the PVM hosts reprise is tested on, KVM shadows
// the guest's page tables and PVM tags the host TLB by the shadow root's
// host address; a root KVM frees and later allocates again at the same
// address can find the TLB entries of the address space that had it
// before. A program then faults where its page tables say it should not:
// busybox's loop of 1000 fork+execs under `stress-ng --cpu 2 --vm 1`
// took, in about one run in ten, a write fault at a new image's entry
// point on a stack page mapped writable and held once, or on a heap page
// the new image has not mapped at all, which the CPU saw present
// (bench/stress.sh). Such a fault is the host's, not the program's: the
// VMM drops every translation KVM holds (Machine.DropTranslations, which
// flushes the TLB) and the instruction runs again. It is not counted
// among the program's exits (HostTrap), so a replay, which may not meet
// it, finds the recording's positions; the frames the program holds do
// not change, so neither does its memory — but for the trap frame the
// fault left at the top of RSP0's stack, which the next trap of the
// program's own overwrites: until then a replay that did not meet the
// fault holds the frame of the program's last trap there, so once the
// retried instruction has run (the next exit that is no trap) that frame
// is put back (programFrame), and RAM is the same either way.

// Page-fault error code bits.
const (
	pfPresent = 1 << 0
	pfWrite   = 1 << 1
	pfUser    = 1 << 2
	pfFetch   = 1 << 4
)

// staleAt is a fault retried after dropping KVM's translations: its RIP
// and address. The same fault again right after means the tables are not
// what the program's accesses meet: it is reported as the program's.
type staleAt struct{ rip, addr uint64 }

// staleFault reports whether the page fault the trap stub holds is one
// the running process's page tables do not explain, and that has not
// just been retried: the CPU saw the page present where the tables map
// nothing (an old address space's entry), or the tables allow the access
// — present and user, writable and not copy-on-write for a write, no
// fetch — that faulted.
func (k *Kernel) staleFault() bool {
	c := k.m.VCPU()
	regs, sregs := c.SyncedRegs(), c.SyncedSregs()
	code, err1 := k.m.RAM().Uint64(regs.RSP + 8)
	rip, err2 := k.m.RAM().Uint64(regs.RSP + frameRIP)
	if err1 != nil || err2 != nil || code&pfUser == 0 || code&pfFetch != 0 {
		return false
	}
	if (staleAt{rip, sregs.CR2}) == k.stale {
		return false
	}
	as := k.proc().as
	if as == nil || sregs.CR3 != as.CR3() {
		return false
	}
	va := sregs.CR2 &^ pageMask
	pte, err := as.Leaf(va)
	if err != nil {
		return false
	}
	if pte&x86.PTEPresent == 0 {
		return code&pfPresent != 0 // seen present: not these tables' entry
	}
	want := uint64(x86.PTEPresent | x86.PTEUser)
	if code&pfWrite != 0 {
		if as.COW(va) {
			return false // copy-on-write: the program's to take (trap)
		}
		want |= x86.PTEWrite
	}
	return pte&want == want
}

// staleOpcode reports whether the invalid-opcode fault the trap stub
// holds is one the program's code does not explain, and that has not just
// been retried: the bytes at RIP, read through the process's own tables,
// decode to an instruction that is not UD0, UD1 or UD2 — the CPU fetched
// other bytes, from a frame a stale translation still maps. (Seen once in
// a full test run: #UD on the `cmp rax, -4096` after ld.so's mmap
// system call.) An instruction this CPU truly lacks faults again at once
// and is the program's then, as a fault that persists is.
func (k *Kernel) staleOpcode() bool {
	rip, err := k.m.RAM().Uint64(k.m.VCPU().SyncedRegs().RSP + frameRIP)
	if err != nil || (staleAt{rip, 0}) == k.stale {
		return false
	}
	as := k.proc().as
	if as == nil || as.Site(rip) != 0 {
		return false // a patched RDTSC: emulated, not stale
	}
	code := make([]byte, min(15, pageSize-rip&pageMask)) // the rest of its page at most
	if as.Read(rip, code) != nil {
		return false
	}
	inst, err := x86asm.Decode(code, 64)
	return err == nil && inst.Op != x86asm.UD0 && inst.Op != x86asm.UD1 && inst.Op != x86asm.UD2
}

// retrying reports whether the running thread is to run again the
// instruction that faulted: a write to a copy-on-write page, or an access
// through a stale translation.
func (k *Kernel) retrying() bool {
	return k.stale != (staleAt{}) || k.cur < len(k.threads) && k.current().retryAt != 0
}

// retryStale drops KVM's translations and has the stub's IRETQ run the
// faulting instruction again.
func (k *Kernel) retryStale(rip, addr uint64) error {
	k.stale = staleAt{rip, addr}
	k.stats.StaleTranslations++
	return k.m.DropTranslations()
}

// retried ends a retry once the retried instruction has run, at an exit
// that is not a trap: the stale fault's frame gives way to the program's.
func (k *Kernel) retried() {
	if k.stale != (staleAt{}) {
		k.frame.putBack(k.m.RAM())
	}
	k.stale = staleAt{}
}

// programFrame is what the program's own traps (and boot) left in the
// trap stub's frame at the top of RSP0's stack, where every trap from
// user mode but a debug trap puts its frame: vector, error code, RIP, CS,
// RFLAGS, RSP, SS.
type programFrame [7 * 8]byte

// frameAt is where the trap stub's frame is on RSP0's stack.
const frameAt = abi.BootStackTop - uint64(len(programFrame{}))

// keep notes the frame in RAM as the program's.
func (f *programFrame) keep(ram *memory.RAM) {
	if b, err := ram.Slice(frameAt, uint64(len(f))); err == nil {
		copy(f[:], b)
	}
}

// putBack writes the program's frame back into RAM.
func (f *programFrame) putBack(ram *memory.RAM) {
	if b, err := ram.Slice(frameAt, uint64(len(f))); err == nil {
		copy(b, f[:])
	}
}
