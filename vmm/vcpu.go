package vmm

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/host/hostview"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/tape"
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
	// Marks is the host time (since boot) of the latest REPRISE_HC_MARK
	// of each id.
	Marks map[uint64]time.Duration
	// End describes how the guest's execution ended, with the RAM and
	// console hashes a recording keeps and a replay compares; nil if the
	// run stopped without a defined end (a VMM error, a cancelled live run).
	End *tape.End
	// Events is how many tape events a replay applied.
	Events uint64
}

// Between returns the host time from the last mark start to the last mark
// end, and whether both were made.
func (r *Result) Between(start, end uint64) (time.Duration, bool) {
	s, hs := r.Marks[start]
	e, he := r.Marks[end]
	return e - s, hs && he
}

var (
	errStopped   = errors.New("vmm: stopped")
	errReplayEnd = errors.New("vmm: replay reached the recording's end")
	// errRecordStop ends a recording, on request, at a repeatable point.
	errRecordStop = errors.New("vmm: recording stopped on request")
)

// noTarget disables the branch counter's exit.
const noTarget = ^uint64(0)

// Run boots the guest and runs it until it powers off, faults, or ctx is
// done. A guest fault is returned as *GuestFault, a replay that stops
// matching its tape as *DivergenceError, a tape that ends early as
// *TapeCutError. A recording whose ctx is cancelled stops at the next point
// a replay can find again and ends normally (Result.End.Reason
// "interrupted"); a replay of it stops at the same point.
func (m *Machine) Run(ctx context.Context) (*Result, error) {
	m.start = time.Now()
	m.startHostClock()
	done := make(chan error, 1)
	go func() {
		// One OS thread for the vCPU's whole life: KVM wants a vCPU's
		// ioctls from one thread, and kicks are aimed at that thread.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid := unix.Gettid()
		m.tid.Store(int32(tid))
		if m.host.log != nil {
			m.host.log(&hostview.Record{Kind: hostview.KindVCPU, Time: m.hostNow(), TID: uint32(tid)})
		}
		err := m.loop()
		m.tid.Store(0)
		done <- err
	}()
	stopSampling := m.sampleTimer()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = m.stopAndWait(done)
	}
	stopSampling()
	m.timer.Stop()
	m.console.Flush()
	end, err := m.endOf(err)
	if err = m.src.finish(end, err); errors.Is(err, errStopped) {
		err = fmt.Errorf("vmm: run interrupted: %w", context.Cause(ctx))
	}
	m.stats.KicksSent = m.kicksSent.Load()
	m.stats.DiskRefused = m.disk.Refused
	res := &Result{Elapsed: time.Since(m.start), Stats: m.stats, Marks: m.marks, End: end}
	if ts, ok := m.src.(*tapeSource); ok {
		res.Events = ts.applied
	}
	if end != nil && end.Reason == tape.EndExited {
		res.Status = end.Status
	}
	return res, err
}

// endOf turns the loop's result into the end of the guest's execution, or
// nil if it did not reach one; the error left is what Run should report.
func (m *Machine) endOf(err error) (*tape.End, error) {
	var (
		end tape.End
		off *devices.PowerOff
		gf  *GuestFault
	)
	switch {
	case errors.As(err, &off):
		end.Reason, end.Status, err = tape.EndExited, off.Status, nil
	case errors.As(err, &gf):
		end.Reason, end.Fault = tape.EndFault, gf.Reason
	case errors.Is(err, errRecordStop), errors.Is(err, errReplayEnd):
		end.Reason, err = tape.EndInterrupted, nil
	default:
		return nil, err
	}
	if err := m.removeProbes(); err != nil {
		return nil, err
	}
	var herr error
	end.RAMHash, herr = m.ramHash()
	if herr != nil {
		return nil, herr
	}
	end.ConsoleHash, end.ConsoleBytes = m.console.Sum()
	return &end, err
}

// ramHash hashes guest RAM with the branch-counter target cleared: it is
// the one word the VMM writes at different times in record and replay.
func (m *Machine) ramHash() ([32]byte, error) {
	if err := m.SetBranchTarget(noTarget); err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(m.ram.Bytes()), nil
}

// endWhere is how the end's position relates to where the vCPU stopped.
func (m *Machine) endWhere() tape.Where {
	if m.lastStop == stopBranch {
		return tape.AtBranch
	}
	return tape.AtExit
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

// stopAndWait asks the vCPU loop to stop and waits for it, kicking again
// while it waits: a recording stops only at a repeatable point and looks
// for one each time the vCPU stops.
func (m *Machine) stopAndWait(done <-chan error) error {
	m.stopping.Store(true)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		m.kick()
		select {
		case err := <-done:
			return err
		case <-t.C:
		}
	}
}

// loop is the vCPU state machine: let the input source act, run, classify
// where the vCPU stopped, dispatch the exit — on errno first, then on the
// exit reason.
func (m *Machine) loop() error {
	c := m.cpu
	for {
		if err := m.src.beforeEntry(m.lastStop); err != nil {
			return err
		}
		entry := m.hostNow()
		err := c.Run()
		if err == unix.EINTR {
			// Clear before looking at pending state, so a kick that lands
			// after this point is seen either here or by the next KVM_RUN.
			c.SetImmediateExit(false)
			m.hostRun(entry, 0, true)
			m.stats.Interrupted++
			m.lastStop = stopKick
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
		if m.lastStop = m.classify(reason); m.lastStop == stopGuestExit {
			if err := m.drainTrace(); err != nil {
				return err
			}
			m.exits++
		}
		m.hostRun(entry, reason, false)
		switch reason {
		case kvm.ExitIO:
			err = m.handleIO()
		case kvm.ExitMMIO:
			m.handleMMIO()
		case kvm.ExitHLT:
			err = m.halt()
		case kvm.ExitIRQWindowOpen:
			// The source injects before the next entry.
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

// classify says where an exit left the guest. Exits the VMM provoked (an
// interrupt window it asked for, the branch-counter target it set) are not
// the guest's own and do not count in Position.Exit: replay must see the
// same ordinals whatever the VMM asked for.
//
// The hook's exit is always the VMM's: at the target it is the stop the
// source asked for; anywhere else the target moved between the hook's
// compare and its exit (liveSource.arm no longer does that), a point that
// depends on when the VMM wrote the target, so no replay finds it again: it
// is treated like a kick, an arbitrary point, and counted in SWBCStray.
// Only the guest's own writes to the port, outside the hook, are its exits.
func (m *Machine) classify(reason kvm.ExitReason) stopKind {
	switch reason {
	case kvm.ExitIRQWindowOpen:
		return stopWindow
	case kvm.ExitIO:
		io := m.cpu.IOExit()
		switch {
		case io.Port == abi.PortSWBC && io.Out && m.inHook(m.cpu.SyncedRegs().RIP):
			if m.atBranchTarget() {
				return stopBranch
			}
			return stopKick
		case io.Port == abi.PortHcall && io.Out && len(io.Data) == 4 && binary.LittleEndian.Uint32(io.Data) == abi.HcBreakpoint:
			return stopProbe // probes exist only in replays: never the guest's
		}
	}
	return stopGuestExit
}

// inHook reports whether rip is in the branch-counter hook. At the hook's
// exit RIP is its port write, or just after it when KVM emulated the write.
func (m *Machine) inHook(rip uint64) bool { return rip >= m.hook[0] && rip < m.hook[1] }

// atBranchTarget reports whether the branch counter equals its target.
func (m *Machine) atBranchTarget() bool {
	count, err1 := m.ram.Uint64(abi.SWBCCountOff)
	target, err2 := m.ram.Uint64(abi.SWBCTargetOff)
	return err1 == nil && err2 == nil && count == target
}

// inject delivers vector now, together with what the interrupt reports,
// applied at this same instant: for the timer the clock page (ns and tick
// count), so guest reads of time change only at injections; for the disk
// the completion (data and status written to guest memory). It returns
// the completion's digest, which a recording logs and a replay checks.
// rx holds the frames a NIC interrupt delivers.
func (m *Machine) inject(vector uint8, clockNs uint64, rx [][]byte) (digest []byte, err error) {
	// Acknowledge first: applying a completion may raise the line again
	// (a disk with more results ready), and that edge must stay pending.
	m.intc.Ack(vector)
	switch vector {
	case abi.IRQBase + abi.IRQTimer:
		m.ticks++
		if err := m.ram.PutUint64(abi.ClockNsOff, clockNs); err != nil {
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
		digest = m.nic.Deliver(rx)
	}
	if err := m.cpu.Interrupt(vector); err != nil {
		return nil, err
	}
	m.hostEvent(hostview.KindInject, uint32(vector), 0)
	m.stats.Injected++
	m.cpu.RequestInterruptWindow(false)
	return digest, nil
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
		m.countBranchExit()
		return nil
	}
	for i := 0; i < io.Count; i++ {
		elem := io.Data[i*io.Size : (i+1)*io.Size]
		if !io.Out {
			m.bus.Read(io.Port, elem)
			if err := m.src.portIn(io.Port, elem); err != nil {
				return err
			}
			continue
		}
		if err := m.bus.Write(io.Port, elem); err != nil {
			return err
		}
		if io.Port == abi.PortTimer {
			m.hostEvent(hostview.KindTimerSet, 0, uint64(m.timer.Period()))
		}
	}
	return nil
}

// countBranchExit counts an exit through the branch counter's port: the
// hook's at the target, the repeatable point the source asked for
// (DESIGN.md §4); the hook's elsewhere, a stray (see classify); or user
// code's own write to the port, a harmless guest exit.
func (m *Machine) countBranchExit() {
	switch {
	case m.lastStop == stopBranch:
		m.stats.SWBCExits++
	case m.inHook(m.cpu.SyncedRegs().RIP):
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

// halt handles an idle guest: the source decides how long idle lasts (a
// live run waits for the next interrupt, a replay skips the wait).
func (m *Machine) halt() error {
	if !m.cpu.InterruptsEnabled() {
		return m.fault("the guest halted with interrupts disabled: it can never wake up")
	}
	return m.src.halt()
}
