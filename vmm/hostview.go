package vmm

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/host/hostview"
	"github.com/reprise-vm/reprise/kvm"
)

// HostLog receives the VMM's own view of a run (Config.Host): vCPU
// entries and exits, idle waits and hypervisor events, stamped on
// CLOCK_MONOTONIC. It is called from the vCPU thread and from device
// goroutines, so it must be safe for concurrent use, and it must be
// quick: it runs on every exit.
type HostLog func(r *hostview.Record)

// hostClock stamps host records: CLOCK_MONOTONIC read once at the run's
// start, advanced by the Go monotonic clock (a vDSO read, where
// unix.ClockGettime is a system call).
type hostClock struct {
	log   HostLog
	mono0 int64 // CLOCK_MONOTONIC at Machine.start, ns
}

func (m *Machine) startHostClock() {
	if m.cfg.Host == nil {
		return
	}
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // cannot fail for this clock
	m.host = hostClock{log: m.cfg.Host, mono0: ts.Nano() - int64(time.Since(m.start))}
	m.host.log(&hostview.Record{Kind: hostview.KindStart, Time: m.host.mono0})
}

// hostNow is the current CLOCK_MONOTONIC time in ns (0 without a host log).
func (m *Machine) hostNow() int64 {
	if m.host.log == nil {
		return 0
	}
	return m.host.mono0 + int64(time.Since(m.start))
}

// hostEvent logs a hypervisor event stamped now.
func (m *Machine) hostEvent(k hostview.Kind, code uint32, arg uint64) {
	if m.host.log == nil {
		return
	}
	m.host.log(&hostview.Record{Kind: k, Time: m.hostNow(), Code: code, Arg: arg})
}

// hostRun logs one stay in the guest that began at entry (hostNow) and
// ended now with reason (err EINTR: a signal), after m.exits was counted.
func (m *Machine) hostRun(entry int64, reason kvm.ExitReason, interrupted bool) {
	if m.host.log == nil {
		return
	}
	code := uint32(reason)
	if interrupted {
		code = hostview.ExitInterrupted
	}
	m.host.log(&hostview.Record{Kind: hostview.KindRun, Time: entry, Dur: m.hostNow() - entry, Exit: m.exits, Code: code})
}

// hostIdle logs an idle wait that began at start (hostNow).
func (m *Machine) hostIdle(start int64) {
	if m.host.log == nil {
		return
	}
	m.host.log(&hostview.Record{Kind: hostview.KindIdle, Time: start, Dur: m.hostNow() - start, Exit: m.exits})
}
