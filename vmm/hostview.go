package vmm

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/kvm"
)

// HostObserver receives the VMM's own view of a run (Config.Host): vCPU
// entries and exits, idle waits and hypervisor events, stamped in ns on
// CLOCK_MONOTONIC. It is called from the vCPU thread and from device
// goroutines, so it must be safe for concurrent use, and it must be
// quick: it runs on every exit. The recorder keeps what it sees beside
// the tape (package hostview); the machine knows nothing of that format.
type HostObserver interface {
	// Started gives the instant the run's own clock reads zero.
	Started(mono int64)
	// VCPUThread says the vCPU runs on host thread tid from now on.
	VCPUThread(at int64, tid uint32)
	// Ran is one stay in the guest from entry for dur, ended by reason or,
	// if interrupted, by a signal; exits is Position.Exit once it ended.
	Ran(entry, dur int64, reason kvm.ExitReason, interrupted bool, exits uint64)
	// Idled is one wait in the VMM for an interrupt after a HLT.
	Idled(start, dur int64, exits uint64)
	// Hypervisor is an event of the machine's own (HypervisorEvent).
	Hypervisor(at int64, ev HypervisorEvent, code uint32, arg uint64)
}

// HypervisorEvent is a machine event a HostObserver sees.
type HypervisorEvent int

const (
	IRQRaised  HypervisorEvent = iota // code: the interrupt line
	Injected                          // code: the vector delivered
	TimerSet                          // arg: the period programmed, ns (0: stopped)
	TimerFired                        // the virtual timer expired
)

// hostClock stamps host records: CLOCK_MONOTONIC read once at the run's
// start, advanced by the Go monotonic clock (a vDSO read, where
// unix.ClockGettime is a system call).
type hostClock struct {
	obs   HostObserver
	mono0 int64 // CLOCK_MONOTONIC at Machine.start, ns
}

func (m *Machine) startHostClock() {
	if m.cfg.Host == nil {
		return
	}
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // cannot fail for this clock
	m.host = hostClock{obs: m.cfg.Host, mono0: ts.Nano() - int64(time.Since(m.start))}
	m.host.obs.Started(m.host.mono0)
}

// hostNow is the current CLOCK_MONOTONIC time in ns (0 without an observer).
func (m *Machine) hostNow() int64 {
	if m.host.obs == nil {
		return 0
	}
	return m.hostAt(m.sinceStart())
}

// hostAt is the host's CLOCK_MONOTONIC at d on the vCPU loop's clock
// (sinceStart): a time the loop read already, not read again.
func (m *Machine) hostAt(d time.Duration) int64 {
	if m.host.obs == nil {
		return 0
	}
	return m.host.mono0 + int64(d)
}

// hostEvent reports a hypervisor event stamped now.
func (m *Machine) hostEvent(ev HypervisorEvent, code uint32, arg uint64) {
	if m.host.obs == nil {
		return
	}
	m.host.obs.Hypervisor(m.hostNow(), ev, code, arg)
}

// hostRun reports one stay in the guest that began at entry (hostNow) and
// ended now with reason (interrupted: a signal), after m.exits was counted.
func (m *Machine) hostRun(entry int64, reason kvm.ExitReason, interrupted bool) {
	if m.host.obs == nil {
		return
	}
	m.host.obs.Ran(entry, m.hostNow()-entry, reason, interrupted, m.exits)
}

// hostIdle reports an idle wait that began at start (hostNow).
func (m *Machine) hostIdle(start int64) {
	if m.host.obs == nil {
		return
	}
	m.host.obs.Idled(start, m.hostNow()-start, m.exits)
}
