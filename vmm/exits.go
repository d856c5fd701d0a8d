package vmm

import (
	"fmt"

	"github.com/reprise-vm/reprise/abi"
)

func (m *Machine) handleIO() error {
	io := m.cpu.IOExit()
	if io.Data == nil || (io.Size != 1 && io.Size != 2 && io.Size != 4) {
		return m.fault(fmt.Sprintf("malformed port I/O exit: port %#x size %d count %d", io.Port, io.Size, io.Count))
	}
	switch {
	case m.kernel != nil && io.Out && (io.Port == abi.PortSyscall || io.Port == abi.PortTrap):
		return m.kernel.Exit(io.Port)
	case io.Port == abi.PortHcall && io.Out:
		return m.hypercall()
	case io.Port == abi.PortProbe && io.Out:
		return m.probeExit()
	case io.Port == abi.PortSWBC && io.Out:
		m.countBranchExit()
		return nil
	}
	for i := 0; i < io.Count; i++ {
		elem := io.Data[i*io.Size : (i+1)*io.Size]
		if !io.Out {
			m.bus.Read(io.Port, elem)
			if err := m.eng.PortIn(io.Port, elem); err != nil {
				return err
			}
			continue
		}
		if err := m.bus.Write(io.Port, elem); err != nil {
			return err
		}
		if io.Port == abi.PortTimer {
			m.hostEvent(TimerSet, 0, uint64(m.timer.Period()))
		}
	}
	return nil
}

// countBranchExit counts an exit through the branch counter's port: the
// hook's at the target, the repeatable point the engine asked for
// (docs/architecture.md, "Position sources"); the hook's elsewhere, a stray
// (see classify); or user code's own write to the port, a harmless guest
// exit.
func (m *Machine) countBranchExit() {
	switch {
	case m.lastStop == StopBranch:
		m.stats.SWBCExits++
	case m.InBranchHook(m.cpu.SyncedRegs().RIP):
		m.stats.SWBCStray++
	}
}

// handleMMIO serves accesses to guest-physical addresses with no RAM: no
// device is memory-mapped yet, so reads float high and writes are dropped.
func (m *Machine) handleMMIO() {
	mm := m.cpu.MMIOExit()
	m.stats.UnassignedMMIO++
	if !mm.Write {
		for i := range mm.Data {
			mm.Data[i] = 0xff
		}
	}
}

// canWake reports whether an idle guest can still get an interrupt: one is
// pending, or a device that raises them on its own (the running timer, a
// disk with requests in flight, a network that can deliver a frame at any
// moment) has its line unmasked.
func (m *Machine) canWake() bool {
	ticking := m.timer.Period() != 0 && !m.intc.Masked(abi.IRQTimer)
	diskBusy := m.disk.Busy() && !m.intc.Masked(abi.IRQDisk)
	network := m.net != nil && !m.intc.Masked(abi.IRQNIC)
	return m.intc.Pending() || ticking || diskBusy || network
}

// halt handles an idle guest: the engine decides how long idle lasts (a
// live run waits for the next interrupt, a replay skips the wait).
func (m *Machine) halt() error {
	if !m.cpu.InterruptsEnabled() {
		return m.fault("the guest halted with interrupts disabled: it can never wake up")
	}
	return m.eng.Halt()
}
