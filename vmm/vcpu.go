package vmm

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
)

// kickSignal interrupts a vCPU thread inside KVM_RUN. SIGURG is the Go
// runtime's own preemption signal: the runtime already handles it on every
// thread and ignores it outside Go code, so it needs no signal.Notify, and
// the vCPU loop must treat EINTR as routine anyway because the runtime sends
// it too.
const kickSignal = unix.SIGURG

// NoBranchTarget, as the branch-counter target, disables its exit.
const NoBranchTarget = ^uint64(0)

// kick makes the vCPU loop look at the interrupt controller soon: it wakes
// a halted vCPU, and forces one inside (or about to enter) KVM_RUN out.
func (m *Machine) kick() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
	tid := m.tid.Load()
	if tid == 0 || int(tid) == unix.Gettid() {
		// Not running, or raised by a device on the vCPU thread itself: the
		// loop looks at the controller before its next entry anyway.
		return
	}
	m.cpu.SetImmediateExit(true)
	_ = unix.Tgkill(unix.Getpid(), int(tid), kickSignal)
	m.kicksSent.Add(1)
}

// loop is the vCPU state machine: let the engine act, run, classify
// where the vCPU stopped, dispatch the exit — on errno first, then on the
// exit reason.
func (m *Machine) loop() error {
	c := m.cpu
	m.exitedAt = 0 // what came before this loop is no exit's work
	if b := m.beside; b != nil {
		m.exitMu.Lock()
		defer func() {
			b.done.Store(true) // before the companion can Hold: it serves no more
			m.exitMu.Unlock()
		}()
	}
	for {
		if err := m.eng.BeforeEntry(m.lastStop); err != nil {
			return err
		}
		if m.kernel != nil && !m.kernel.Runnable() {
			// Nothing to run: idle at this stop, as at a HLT exit,
			// until the engine has delivered an interrupt.
			m.stats.KernelIdles++
			if err := m.eng.Halt(); err != nil {
				return err
			}
			continue
		}
		if err := m.placeCounter(); err != nil {
			return err
		}
		in := m.yield.stopped(m.sinceStart(), m.sinceStart)
		entry := m.hostAt(in)
		m.inGuest.Store(true)
		if m.beside != nil {
			m.beside.entering()
			m.exitMu.Unlock()
		}
		err := c.Run()
		if m.beside != nil {
			m.exitMu.Lock()
		}
		out := m.sinceStart()
		m.stats.timeRun(in, m.exitedAt, out)
		m.exitedAt = out
		m.inGuest.Store(false)
		m.settled, m.exitRegs = false, nil
		m.noteExit()
		if ferr := m.foldCounter(); ferr != nil {
			return ferr
		}
		if err == unix.EINTR {
			// Clear before looking at pending state, so a kick that lands
			// after this point is seen either here or by the next KVM_RUN.
			c.SetImmediateExit(false)
			m.hostRun(entry, 0, true)
			m.stats.Interrupted++
			m.lastStop = StopKick
			continue
		}
		if err != nil {
			return err
		}
		reason := c.ExitReason()
		m.stats.countExit(reason)
		// Count before handling: inputs logged while handling this exit
		// carry its ordinal. Trace records written since the last exit
		// carry the ordinal before it.
		if m.lastStop = m.classify(reason); m.lastStop == StopGuestExit && !m.finishesBeside() {
			if err := m.eng.GuestExit(); err != nil {
				return err
			}
			m.exits++
		}
		m.hostRun(entry, reason, false)
		switch reason {
		case kvm.ExitIO:
			err = m.handleIO()
		case kvm.ExitMMIO:
			if m.atCounterGuard() {
				err = m.completeCounterLoad()
			} else {
				m.handleMMIO()
			}
		case kvm.ExitHLT:
			err = m.halt()
		case kvm.ExitIRQWindowOpen:
			// The engine injects before the next entry.
		case kvm.ExitX86RDMSR, kvm.ExitX86WRMSR:
			// Denied: the guest gets #GP, as for an MSR that does not exist.
			m.stats.MSRDenied++
			c.CompleteMSR(0, true)
		case kvm.ExitShutdown:
			err = m.fault("triple fault: the guest took an exception it could not handle (KVM_EXIT_SHUTDOWN)")
		case kvm.ExitFailEntry:
			err = m.fault(fmt.Sprintf("VM entry failed, hardware reason %#x", c.FailEntryReason()))
		case kvm.ExitInternalError:
			ie := c.InternalErr()
			err = m.fault(fmt.Sprintf("KVM internal error, suberror %d", ie.Suberror))
		default:
			err = m.fault(fmt.Sprintf("unhandled exit %v", reason))
		}
		if err != nil {
			return err
		}
	}
}

// finishesBeside reports whether the guest's port exit finishes what a
// companion served and counted (ServeBeside).
func (m *Machine) finishesBeside() bool {
	fk, ok := m.kernel.(FinishingKernel)
	if !ok || m.beside == nil || m.cpu.ExitReason() != kvm.ExitIO {
		return false
	}
	io := m.cpu.IOExit()
	return io.Out && fk.FinishesBeside(io.Port)
}

// classify says where an exit left the guest. Exits the VMM provoked (an
// interrupt window it asked for, the branch-counter target it set) are not
// the guest's own and do not count in Position.Exit: replay must see the
// same ordinals whatever the VMM asked for.
//
// The hook's exit is always the VMM's: at the target it is the stop the
// engine asked for; anywhere else the target moved between the hook's
// compare and its exit (the recorder's engine.arm no longer does that), a point that
// depends on when the VMM wrote the target, so no replay finds it again: it
// is treated like a kick, an arbitrary point, and counted in SWBCStray.
// Only the guest's own writes to the port, outside the hook, are its exits.
func (m *Machine) classify(reason kvm.ExitReason) Stop {
	switch reason {
	case kvm.ExitIRQWindowOpen:
		return StopWindow
	case kvm.ExitMMIO:
		if m.atCounterGuard() {
			// The register counter's exit: at the target, or a step
			// towards one further than r15 reaches (placeCounter).
			if m.atBranchTarget() {
				return StopBranch
			}
			return StopKick
		}
	case kvm.ExitIO:
		io := m.cpu.IOExit()
		switch {
		case io.Port == abi.PortSWBC && io.Out && m.InBranchHook(m.cpu.SyncedRegs().RIP):
			if m.atBranchTarget() {
				return StopBranch
			}
			return StopKick
		case io.Port == abi.PortHcall && io.Out && len(io.Data) == 4 && binary.LittleEndian.Uint32(io.Data) == abi.HcBreakpoint:
			return StopProbe // probes exist only in replays: never the guest's
		case io.Port == abi.PortProbe && io.Out:
			return StopProbe // the same probes, patched to exit from CPL3
		case m.kernel != nil && io.Out && m.kernel.HostTrap(io.Port):
			return StopProbe
		}
	}
	return StopGuestExit
}

// atBranchTarget reports whether the branch counter equals its target.
func (m *Machine) atBranchTarget() bool {
	count, err1 := m.ram.Uint64(abi.SWBCCountOff)
	target, err2 := m.ram.Uint64(abi.SWBCTargetOff)
	return err1 == nil && err2 == nil && count == target
}
