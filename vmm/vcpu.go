package vmm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/vmm/devices"
)

// kickSignal interrupts a vCPU thread inside KVM_RUN. SIGURG is the Go
// runtime's own preemption signal: the runtime already handles it on every
// thread and ignores it outside Go code, so it needs no signal.Notify, and
// the vCPU loop must treat EINTR as routine anyway because the runtime sends
// it too.
const kickSignal = unix.SIGURG

// Result is how a run ended.
type Result struct {
	Status  uint32 // the guest's exit status
	Elapsed time.Duration
	Stats   Stats
	Marks   []Mark
}

// Mark is a host timestamp of a guest REPRISE_HC_MARK hypercall.
type Mark struct {
	ID uint64
	At time.Duration // since boot
}

var errStopped = errors.New("vmm: stopped")

// Run boots the guest and runs it until it powers off, faults, or ctx is
// done. A guest fault is returned as *GuestFault.
func (m *Machine) Run(ctx context.Context) (*Result, error) {
	m.start = time.Now()
	done := make(chan error, 1)
	go func() {
		// One OS thread for the vCPU's whole life: KVM wants a vCPU's
		// ioctls from one thread, and kicks are aimed at that thread.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		m.tid.Store(int32(unix.Gettid()))
		err := m.loop()
		m.tid.Store(0)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		m.stop()
		err = <-done
		if errors.Is(err, errStopped) {
			err = fmt.Errorf("vmm: run interrupted: %w", context.Cause(ctx))
		}
	}
	m.timer.Stop()
	m.console.Flush()
	m.stats.KicksSent = m.kicksSent.Load()
	res := &Result{Elapsed: time.Since(m.start), Stats: m.stats, Marks: m.marks}
	var off *devices.PowerOff
	if errors.As(err, &off) {
		res.Status = off.Status
		return res, nil
	}
	return res, err
}

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

func (m *Machine) stop() {
	m.stopping.Store(true)
	m.kick()
}

// loop is the vCPU state machine: deliver interrupts, run, dispatch the
// exit — on errno first, then on the exit reason.
func (m *Machine) loop() error {
	c := m.cpu
	for {
		if m.stopping.Load() {
			return errStopped
		}
		if err := m.deliverInterrupt(); err != nil {
			return err
		}
		err := c.Run()
		if err == unix.EINTR {
			// Clear before looking at pending state, so a kick that lands
			// after this point is seen either here or by the next KVM_RUN.
			c.SetImmediateExit(false)
			m.stats.Interrupted++
			continue
		}
		if err != nil {
			return err
		}
		reason := c.ExitReason()
		m.stats.countExit(reason)
		switch reason {
		case kvm.ExitIO:
			err = m.handleIO()
		case kvm.ExitMMIO:
			m.handleMMIO()
		case kvm.ExitHLT:
			err = m.halt()
		case kvm.ExitIRQWindowOpen:
			// deliverInterrupt injects at the top of the loop.
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

// deliverInterrupt injects the highest-priority pending interrupt if the
// guest can take one now, or asks KVM to exit as soon as it can.
func (m *Machine) deliverInterrupt() error {
	c := m.cpu
	vector, ok := m.intc.Next()
	if !ok {
		c.RequestInterruptWindow(false)
		return nil
	}
	if !c.ReadyForInterrupt() {
		c.RequestInterruptWindow(true)
		return nil
	}
	if vector == abi.IRQBase+abi.IRQTimer {
		m.ticks++
		if err := m.updateClock(); err != nil {
			return err
		}
	}
	if err := c.Interrupt(vector); err != nil {
		return err
	}
	m.intc.Ack(vector)
	m.stats.Injected++
	c.RequestInterruptWindow(false)
	return nil
}

// updateClock refreshes the paravirtual clock page. It runs only while the
// vCPU is stopped, at an injection, so guest reads see a value fixed at a
// known position.
func (m *Machine) updateClock() error {
	if err := m.ram.PutUint64(abi.ClockNsOff, uint64(m.now())); err != nil {
		return err
	}
	return m.ram.PutUint64(abi.ClockTicksOff, m.ticks)
}

func (m *Machine) now() time.Duration { return time.Since(m.start) }

func (m *Machine) handleIO() error {
	io := m.cpu.IOExit()
	if io.Data == nil || (io.Size != 1 && io.Size != 2 && io.Size != 4) {
		return m.fault(fmt.Sprintf("malformed port I/O exit: port %#x size %d count %d", io.Port, io.Size, io.Count))
	}
	switch {
	case io.Port == abi.PortHcall && io.Out:
		return m.hypercall()
	case io.Port == abi.PortSWBC && io.Out:
		return m.branchTarget()
	}
	for i := 0; i < io.Count; i++ {
		elem := io.Data[i*io.Size : (i+1)*io.Size]
		if !io.Out {
			m.bus.Read(io.Port, elem)
			continue
		}
		if err := m.bus.Write(io.Port, elem); err != nil {
			return err
		}
	}
	return nil
}

// branchTarget handles the software branch counter reaching the target the
// VMM wrote in the swbc page (DESIGN.md §4): the exit that recording and
// replay will position asynchronous events at. User code can also write the
// port directly; such an exit, with the count not at the target, is stray.
func (m *Machine) branchTarget() error {
	count, err := m.ram.Uint64(abi.SWBCCountOff)
	if err != nil {
		return err
	}
	target, err := m.ram.Uint64(abi.SWBCTargetOff)
	if err != nil {
		return err
	}
	if count != target {
		m.stats.SWBCStray++
		return nil
	}
	m.stats.SWBCExits++
	return nil
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

// halt waits, outside KVM_RUN, until an interrupt is pending. This is the
// idle time a replay can skip.
func (m *Machine) halt() error {
	if !m.cpu.InterruptsEnabled() {
		return m.fault("the guest halted with interrupts disabled: it can never wake up")
	}
	if !m.intc.Pending() && (m.timer.Period() == 0 || m.intc.Masked(abi.IRQTimer)) {
		return m.fault("the guest is idle (HLT) with its timer stopped or masked and nothing else that could wake it")
	}
	t0 := time.Now()
	for !m.intc.Pending() {
		<-m.wake
		if m.stopping.Load() {
			return errStopped
		}
	}
	m.stats.Halted += time.Since(t0)
	return nil
}
