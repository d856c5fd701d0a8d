package vmm

import (
	"encoding/binary"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/internal/tick"
	"github.com/reprise-vm/reprise/kvm"
)

// Sample is the guest's user-mode state at a sampling point: the
// instrumented code's location and its frame-pointer call stack.
type Sample struct {
	Pos   Position
	Time  time.Duration // record-time host time of the last event before it
	RIP   uint64        // where the sampled code was (the branch counter's caller)
	Stack []uint64      // return addresses, innermost first
	Regs  kvm.Regs
}

// Position is an execution position: guest-initiated exits so far and the
// software branch count (as on the tape).
type Position struct{ Exit, Branch uint64 }

// position is where the guest is now.
func (m *Machine) position() Position {
	count, _ := m.ram.Uint64(abi.SWBCCountOff)
	return Position{Exit: m.exits, Branch: count}
}

// recordTime maps a point of a replay at branch count b to the recorded
// run's host time (recordClock); outside replays it is the time now.
func (m *Machine) recordTime(b uint64) time.Duration {
	ts, ok := m.src.(*tapeSource)
	if !ok {
		return m.now()
	}
	next, _ := ts.script.Peek()
	return ts.rtime.at(b, next, m.stats.Exits[kvm.ExitHLT])
}

// SampleHandler receives each sample with the guest's memory.
type SampleHandler func(s *Sample, mem GuestMemory) error

// sampleTimer kicks the vCPU every Config.SamplePeriod for a timed sample
// until the returned function is called.
func (m *Machine) sampleTimer() (stop func()) {
	if m.cfg.SamplePeriod <= 0 {
		return func() {}
	}
	return tick.Every(m.cfg.SamplePeriod, func() {
		m.sampleDue.Store(true)
		m.kick()
	})
}

// maxStackDepth bounds a frame-pointer walk through guest-controlled data.
const maxStackDepth = 64

// takeSample records the state where the vCPU stopped. At a
// branch-counter stop (atTarget), or a timed kick that lands in the hook,
// the vCPU stands in the hook, which builds no frame: the sampled code's
// address is the return address at [rsp], and rbp is still that code's
// frame. Elsewhere it is RIP.
func (m *Machine) takeSample(atTarget bool) error {
	regs := *m.cpu.SyncedRegs()
	pos := m.position()
	s := &Sample{Pos: pos, Time: m.recordTime(pos.Branch), Regs: regs, RIP: regs.RIP}
	var b [16]byte
	if atTarget || m.inHook(regs.RIP) {
		s.RIP = 0
		if m.ReadVirt(regs.RSP, b[:8]) == nil {
			s.RIP = binary.LittleEndian.Uint64(b[:8])
		}
	}
	// Walk the frame-pointer chain: [rbp] = the caller's rbp, [rbp+8] =
	// the return address; stop at anything implausible.
	for fp := regs.RBP; len(s.Stack) < maxStackDepth && fp >= abi.KernelBase && fp%8 == 0; {
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
