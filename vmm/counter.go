package vmm

import (
	"fmt"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/kvm"
)

// BranchCounter is how an image keeps the software branch counter
// (docs/architecture.md, "Position sources").
type BranchCounter uint8

const (
	// CounterNone: the image does not count; only exit-sync positions.
	CounterNone BranchCounter = iota
	// CounterHook: every basic block calls the trace-pc hook, which counts
	// in the swbc page and writes to the swbc port at the target.
	CounterHook
	// CounterRegister: every basic block moves r15 down one byte through
	// the countdown region and loads through it (abi.CounterBase); the
	// load that reaches the guard page is an MMIO exit at the target.
	CounterRegister
)

func (c BranchCounter) String() string {
	switch c {
	case CounterHook:
		return "trace-pc hook"
	case CounterRegister:
		return "r15 register"
	}
	return "none"
}

// BranchCounterOf says how img counts branches.
func BranchCounterOf(img *elffile.Image) BranchCounter {
	if img == nil {
		return CounterNone
	}
	if _, ok := img.Lookup(abi.SWBCRegisterSymbol); ok {
		return CounterRegister
	}
	if _, ok := img.Lookup(SWBCHookSymbol); ok {
		return CounterHook
	}
	return CounterNone
}

// The register counter keeps r15 at guardTop + (armed - count): the count
// the guest is at is known from r15 and the target it was placed for
// (armed), and the block that makes them equal loads from the guard page's
// top byte. The swbc page keeps the count and the target as for the hook,
// so positions, snapshots and RAM hashes read them the same way: the
// machine folds r15 into the count at every stop and places r15 again
// before an entry when a target came into reach.
const (
	guardTop = abi.CounterGuardTop
	// maxReach is the farthest count ahead r15 can be placed: a target
	// further away is reached in steps, each an exit the engine sees as a
	// kick (an unrepeatable point, where it asks for nothing).
	maxReach = abi.CounterSpan - 4096
)

// registerCounter is the machine's side of CounterRegister.
type registerCounter struct {
	armed  uint64 // the count r15 was placed to reach
	placed bool   // false before the first placement and after a restore
	spent  bool   // the guard load at armed has exited: r15 must move on
}

// foldCounter reads the count off r15 after a KVM_RUN and stores it in the
// swbc page. r15 is the guest's register: a guest that moved it outside
// the region has broken its own counter, and the run cannot go on exactly.
func (m *Machine) foldCounter() error {
	if m.counter != CounterRegister || !m.reg.placed {
		return nil
	}
	r15 := m.cpu.SyncedRegs().R15
	ahead := r15 - guardTop
	if r15 < guardTop || ahead > maxReach || ahead > m.reg.armed {
		return m.fault(fmt.Sprintf("r15 is %#x, outside the branch counter's region [%#x, %#x): code built for the register counter must leave r15 to it",
			r15, guardTop, guardTop+maxReach+1))
	}
	last, err := m.ram.Uint64(abi.SWBCCountOff)
	if err != nil {
		return err
	}
	count := m.reg.armed - ahead
	if count < last {
		// Only lea moves r15, and only down: r15 was put back up, as code
		// not built for the counter does that saves r15, runs counted code
		// (a callback) and restores it. Positions would repeat.
		return m.fault(fmt.Sprintf("the branch count went back from %d to %d: code not built for the register counter saved and restored r15 around counted code, so positions cannot be exact",
			last, count))
	}
	return m.ram.PutUint64(abi.SWBCCountOff, count)
}

// placeCounter places r15 before a KVM_RUN for the target in the swbc page,
// or as far as it reaches. It does nothing while r15 is placed for that
// target already, or, with no target in reach, while its placement has
// not been reached: most stops move nothing.
func (m *Machine) placeCounter() error {
	if m.counter != CounterRegister {
		return nil
	}
	count, err := m.ram.Uint64(abi.SWBCCountOff)
	if err != nil {
		return err
	}
	target, err := m.ram.Uint64(abi.SWBCTargetOff)
	if err != nil {
		return err
	}
	inReach := target > count && target-count <= maxReach
	if m.reg.placed && !m.reg.spent {
		switch {
		case inReach && m.reg.armed == target:
			return nil // placed for it already
		case !inReach && m.reg.armed > count:
			return nil // no target in reach: the placement stands until its own stop
		case count == target && count == m.reg.armed:
			return nil // kicked between the block's lea and its load, which exits at the target
		}
	}
	armed := count + maxReach
	if inReach {
		armed = target
	}
	if !m.reg.placed || m.inputPending() {
		// Before the first entry (or after a restore's SetRegs), kvm_run's
		// registers are not yet the vCPU's: have KVM store them. After an
		// IN or an MMIO read, KVM writes the value at the next KVM_RUN,
		// before it loads registers marked dirty: it would be lost (a
		// replay's second 32-bit entropy read came back as the first).
		if err := m.Settle(); err != nil {
			return err
		}
	}
	// The kernel reads the count off r15 and armed (its trace records).
	if err := m.ram.PutUint64(abi.SWBCArmedOff, armed); err != nil {
		return err
	}
	regs := m.cpu.SyncedRegs()
	regs.R15 = guardTop + (armed - count)
	m.cpu.MarkRegsDirty()
	m.reg = registerCounter{armed: armed, placed: true}
	return nil
}

// inputPending reports whether the last exit left a value for KVM to
// complete the guest's instruction with (an IN, an MMIO read) that no
// Settle has completed yet.
func (m *Machine) inputPending() bool {
	if m.settled {
		return false
	}
	switch m.cpu.ExitReason() {
	case kvm.ExitIO:
		return !m.cpu.IOExit().Out
	case kvm.ExitMMIO:
		return !m.cpu.MMIOExit().Write
	}
	return false
}

// atCounterGuard reports whether an MMIO exit is the register counter's
// load from its guard page.
func (m *Machine) atCounterGuard() bool {
	if m.counter != CounterRegister {
		return false
	}
	mm := m.cpu.MMIOExit()
	return !mm.Write && mm.Addr >= abi.CounterGuard && mm.Addr < abi.CounterGuard+4096
}

// completeCounterLoad finishes the guard load (the count loads zero, as
// from every other page) without entering the guest, so r15 can be placed
// again before the next entry: KVM completes an MMIO read at the next
// KVM_RUN, from the instruction state it kept, and would undo a placement
// made before that. A kick landing meanwhile is not lost: this runs
// before the engine's next look at what is pending.
func (m *Machine) completeCounterLoad() error {
	mm := m.cpu.MMIOExit()
	clear(mm.Data)
	m.reg.spent = true
	if m.lastStop == StopBranch {
		m.stats.SWBCExits++
	}
	return m.Settle()
}
