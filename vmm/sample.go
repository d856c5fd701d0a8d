package vmm

import (
	"encoding/binary"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
)

// Sample is the guest's user-mode state at a sampling point: the
// instrumented code's location and its frame-pointer call stack.
type Sample struct {
	Pos   Position
	RIP   uint64   // where the sampled code was (the branch counter's caller)
	Stack []uint64 // return addresses, innermost first
	Regs  kvm.Regs
}

// Position is an execution position (as on the tape).
type Position struct{ Exit, Branch uint64 }

// SampleHandler receives each sample with the guest's memory.
type SampleHandler func(s *Sample, mem GuestMemory) error

// maxStackDepth bounds a frame-pointer walk through guest-controlled data.
const maxStackDepth = 64

// takeSample records the state at a sampling point. The vCPU stands in the
// branch counter's hook, which builds no frame: the sampled code's address
// is the return address at [rsp], and rbp is still the caller's frame.
func (m *Machine) takeSample() error {
	regs := *m.cpu.SyncedRegs()
	count, _ := m.ram.Uint64(abi.SWBCCountOff)
	s := &Sample{Pos: Position{Exit: m.exits, Branch: count}, Regs: regs}
	var b [16]byte
	if m.ReadVirt(regs.RSP, b[:8]) == nil {
		s.RIP = binary.LittleEndian.Uint64(b[:8])
	}
	// Walk the frame-pointer chain: [rbp] = the caller's rbp, [rbp+8] =
	// the return address; stop at anything implausible.
	for fp := regs.RBP; len(s.Stack) < maxStackDepth && fp >= abi.UserBase && fp%8 == 0; {
		if m.ReadVirt(fp, b[:]) != nil {
			break
		}
		next, ret := binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
		if ret == 0 {
			break
		}
		s.Stack = append(s.Stack, ret)
		if next <= fp {
			break // frames grow towards higher addresses
		}
		fp = next
	}
	m.stats.Samples++
	if m.cfg.OnSample == nil {
		return nil
	}
	return m.cfg.OnSample(s, m)
}
