package vmm

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/vmm/x86"
)

// What an engine sees of the machine and does to it, between KVM_RUNs on
// the vCPU thread.

// Position is where the guest is now.
func (m *Machine) Position() Position {
	count, _ := m.ram.Uint64(abi.SWBCCountOff)
	return Position{Exit: m.exits, Branch: count}
}

// Regs are the guest's general registers at this stop (KVM syncs them
// into kvm_run at every exit). A change to them must be followed by
// MarkRegsDirty.
func (m *Machine) Regs() *kvm.Regs { return m.cpu.SyncedRegs() }

// RegsDigest summarises the guest's general registers, so a replay
// notices a guest that reached a recorded position in another state. The
// register counter's r15 is left out: it is placed for each run's own next
// target (the count it stands for is the position's). So is the trap flag
// of RFLAGS: a debugger single-stepping a replay sets it where the
// recording had none (programs do not set it themselves).
func (m *Machine) RegsDigest() uint64 { return m.digest(*m.cpu.SyncedRegs()) }

// EventDigest is RegsDigest of the registers as the stop's exit left
// them, whether or not a Settle (a checkpoint's, or its check's) has since
// completed the exit's instruction: the registers an event at the stop is
// logged with, the same in a recording that took checkpoints and in a
// replay that takes or checks none. (KVM completes an OUT, its skip, and
// an IN, its value, at the next KVM_RUN, which a Settle is; seen under
// nested SVM to change an interrupt's digest after a system call.)
func (m *Machine) EventDigest() uint64 { return m.digest(m.eventRegs()) }

// eventRegs are the registers as the stop's exit left them (EventDigest).
func (m *Machine) eventRegs() kvm.Regs {
	if m.besideRegs != nil {
		return *m.besideRegs
	}
	if m.settled && m.exitRegs != nil {
		return *m.exitRegs
	}
	return *m.cpu.SyncedRegs()
}

// OtherKVMEventDigests are EventDigest as other kinds of KVM show the
// same stop. The kinds differ in how far the exit's instruction has gone
// when the VMM sees the exit: at port I/O, KVM on VMX and SVM leaves RIP
// on the IN or OUT (it completes it at the next KVM_RUN) where PVM's
// emulation of CPL0 leaves it past; at a faulting access (the register
// counter's guard load) PVM shows RFLAGS.RF set, as the CPU does for an
// instruction it will restart, and VMX and SVM clear. A program cannot
// tell (its I/O is done either way; PUSHF clears RF in its image), so
// these are the same guest state, and a tape recorded on one kind replays
// on the other.
func (m *Machine) OtherKVMEventDigests() []uint64 {
	r := m.eventRegs()
	flipped := r
	flipped.RFLAGS ^= x86.RFLAGSRF
	out := []uint64{m.digest(flipped)}
	if m.lastExit.Reason != kvm.ExitIO {
		return out
	}
	var code [2 * maxIOInsn]byte
	if m.ReadVirt(r.RIP-maxIOInsn, code[:]) != nil {
		return out
	}
	if n := ioInsnLen(code[maxIOInsn:]); n > 0 { // on the instruction: past it
		past := r
		past.RIP += uint64(n)
		out = append(out, m.digest(past))
	}
	for n := 1; n <= maxIOInsn; n++ { // past it: on it
		if ioInsnLen(code[maxIOInsn-n:]) == n {
			on := r
			on.RIP -= uint64(n)
			out = append(out, m.digest(on))
		}
	}
	return out
}

// maxIOInsn is the longest IN or OUT: an operand-size prefix, the opcode,
// a port byte.
const maxIOInsn = 3

// ioInsnLen is the length of the IN or OUT b begins with, 0 if it begins
// with none.
func ioInsnLen(b []byte) int {
	n := 0
	if b[0] == 0x66 {
		n++
	}
	switch b[n] {
	case 0xe4, 0xe5, 0xe6, 0xe7: // port in an immediate byte
		return n + 2
	case 0xec, 0xed, 0xee, 0xef: // port in dx
		return n + 1
	}
	return 0
}

func (m *Machine) digest(r kvm.Regs) uint64 {
	if m.counter == CounterRegister {
		r.R15 = 0
	}
	r.RFLAGS &^= x86.RFLAGSTF
	h := fnv.New64a()
	var b [8]byte
	for _, v := range [...]uint64{
		r.RAX, r.RBX, r.RCX, r.RDX, r.RSI, r.RDI, r.RSP, r.RBP,
		r.R8, r.R9, r.R10, r.R11, r.R12, r.R13, r.R14, r.R15, r.RIP, r.RFLAGS,
	} {
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		h.Write(b[:])
	}
	return h.Sum64()
}

// ExitReason is the reason of the exit the vCPU stopped at.
func (m *Machine) ExitReason() kvm.ExitReason { return m.lastExit.Reason }

// ExitPort is the port of the current exit if it is port I/O, else 0.
func (m *Machine) ExitPort() uint16 { return m.lastExit.Port }

// exitInfo is an exit's reason and, for port I/O, its port.
type exitInfo struct {
	Reason kvm.ExitReason
	Port   uint16
}

// noteExit records kvm_run's exit after a KVM_RUN of the loop.
func (m *Machine) noteExit() {
	m.lastExit = exitInfo{Reason: m.cpu.ExitReason()}
	if m.lastExit.Reason == kvm.ExitIO {
		m.lastExit.Port = m.cpu.IOExit().Port
	}
}

// DescribeExit names an exit reason and, for port I/O, its port.
func DescribeExit(reason kvm.ExitReason, port uint16) string {
	if reason == kvm.ExitIO {
		return fmt.Sprintf("%v port %#x", reason, port)
	}
	return reason.String()
}

// SinceExit is the host time since the vCPU loop's last KVM_RUN returned:
// how long the VMM has been serving its exit.
func (m *Machine) SinceExit() time.Duration {
	if m.exitedAt == 0 {
		return 0
	}
	return m.sinceStart() - m.exitedAt
}

// sinceStart is the host time since the machine started: the vCPU loop's
// clock, one monotonic read.
func (m *Machine) sinceStart() time.Duration { return time.Since(m.start) }

// LastStop is where the vCPU loop stopped last.
func (m *Machine) LastStop() Stop { return m.lastStop }

// Now is the run's own clock: the time since Run started, less the
// time it was paused.
func (m *Machine) Now() time.Duration { return m.RunTime(time.Now()) }

// RunTime restates a host instant (a received frame's arrival) on the
// run's own clock. Called on the vCPU thread: the pauses are its own.
func (m *Machine) RunTime(t time.Time) time.Duration { return t.Sub(m.start) - m.paused }

// Paused runs f with the run's clock stopped, as a VM paused for a
// snapshot: the guest then sees no time pass (at most one timer tick comes
// due), so a recording's checkpoints do not change what it records.
func (m *Machine) Paused(f func() error) error {
	t0 := time.Now()
	defer func() { m.paused += time.Since(t0) }()
	return f()
}

// Stopping reports whether the run has been asked to stop.
func (m *Machine) Stopping() bool { return m.stopping.Load() }

// Stats are the run's counters so far; engines add theirs.
func (m *Machine) Stats() *Stats { return &m.stats }

// NextInterrupt is the highest-priority interrupt pending and unmasked.
func (m *Machine) NextInterrupt() (vector uint8, ok bool) { return m.intc.Next() }

// InterruptPending reports whether any unmasked interrupt is pending.
func (m *Machine) InterruptPending() bool { return m.intc.Pending() }

// ReadyForInterrupt reports whether the guest can take an interrupt now:
// always, with a Kernel, which takes them itself.
func (m *Machine) ReadyForInterrupt() bool { return m.kernel != nil || m.cpu.ReadyForInterrupt() }

// RequestInterruptWindow asks KVM to exit as soon as the guest can take
// an interrupt (or stops asking).
func (m *Machine) RequestInterruptWindow(on bool) { m.cpu.RequestInterruptWindow(on) }

// InGuest reports whether the vCPU thread is inside KVM_RUN now, rather
// than in the VMM serving an exit (for a Kernel's program, its system
// calls and faults): a sampler's view, read from another thread.
func (m *Machine) InGuest() bool { return m.inGuest.Load() }

// Kick makes the vCPU loop stop soon (StopKick) and wakes an idle guest.
func (m *Machine) Kick() { m.kick() }

// SetBranchHook tells the machine where a Kernel's program keeps its
// branch-counter hook, [start, end): the machine tells the hook's exits
// from the program's own by it (classify).
func (m *Machine) SetBranchHook(start, end uint64) {
	m.counter, m.hook = CounterHook, [2]uint64{start, end}
}

// BranchCounter is how the guest counts branches.
func (m *Machine) BranchCounter() BranchCounter { return m.counter }

// InBranchHook reports whether rip is in the branch-counter hook. At the
// hook's exit RIP is its port write, or just after it when KVM emulated
// the write.
func (m *Machine) InBranchHook(rip uint64) bool { return rip >= m.hook[0] && rip < m.hook[1] }

// Deliver injects vector now with what the host has for it: the time
// for a tick, the waiting frames for the NIC.
func (m *Machine) Deliver(vector uint8) (*Delivery, error) {
	d := &Delivery{Vector: vector}
	if vector == abi.IRQBase+abi.IRQTimer {
		d.Clock = m.Now()
	}
	var data [][]byte
	if vector == abi.IRQBase+abi.IRQNIC && m.net != nil {
		room := m.nic.RXFree()
		if m.kernel != nil {
			room = abi.NICRing // messages for the kernel, a ring's worth at a time
		}
		d.Frames = m.net.Take(room)
		for _, f := range d.Frames {
			data = append(data, f.Data)
		}
	}
	var err error
	if d.Digest, err = m.Inject(vector, d.Clock, data); err != nil {
		return nil, err
	}
	if len(d.Frames) > 0 && m.net.Backlog() > 0 && (m.kernel != nil || m.nic.RXFree() > 0) {
		m.raiseNIC() // more waiting than this delivery took
	}
	return d, nil
}

// Inject delivers vector now, together with what the interrupt reports,
// applied at this same instant: for the timer the clock page (time and
// tick count), so guest reads of time change only at injections; for the
// disk the completion (data and status written to guest memory); for the
// NIC the frames rx. It returns the completion's digest, which a
// recording logs and a replay checks.
func (m *Machine) Inject(vector uint8, clock time.Duration, rx [][]byte) (digest []byte, err error) {
	// Acknowledge first: applying a completion may raise the line again
	// (a disk with more results ready), and that edge must stay pending.
	m.intc.Ack(vector)
	switch vector {
	case abi.IRQBase + abi.IRQTimer:
		m.ticks++
		if err := m.ram.PutUint64(abi.ClockNsOff, uint64(clock)); err != nil {
			return nil, err
		}
		if err := m.ram.PutUint64(abi.ClockTicksOff, m.ticks); err != nil {
			return nil, err
		}
	case abi.IRQBase + abi.IRQDisk:
		if digest, err = m.disk.Complete(); err != nil {
			return nil, err
		}
	case abi.IRQBase + abi.IRQNIC:
		if k, ok := m.kernel.(NetKernel); ok {
			err = k.Receive(rx)
		} else {
			digest = m.nic.Deliver(rx)
		}
	}
	if err != nil {
		return nil, err
	}
	if m.kernel != nil {
		err = m.kernel.Interrupt(vector, clock)
	} else {
		err = m.cpu.Interrupt(vector)
	}
	if err != nil {
		return nil, err
	}
	m.hostEvent(Injected, uint32(vector), 0)
	m.stats.Injected++
	m.cpu.RequestInterruptWindow(false)
	return digest, nil
}

// Idle waits, outside KVM_RUN, until an interrupt is pending or the run is
// asked to stop: the idle time of a live run, which a replay skips.
func (m *Machine) Idle() error {
	if !m.canWake() {
		return m.fault("the guest is idle (HLT) with its timer stopped or masked and nothing else that could wake it")
	}
	t0, idle := time.Now(), m.hostNow()
	for !m.intc.Pending() {
		<-m.wake
		if m.stopping.Load() {
			break // the HLT exit itself is a stop point
		}
	}
	m.stats.Halted += time.Since(t0)
	m.hostIdle(idle)
	return nil
}

// Transmit sends a frame the guest sent to the network backend, if any,
// and shows it to Config.Tap.
func (m *Machine) Transmit(frame []byte) error {
	if m.cfg.Tap != nil {
		if err := m.cfg.Tap(frame); err != nil {
			return err
		}
	}
	if m.net == nil {
		return nil
	}
	return m.net.Send(frame)
}
