package recorder

import (
	"errors"
	"fmt"

	"github.com/reprise-vm/reprise/host/hostview"
	"github.com/reprise-vm/reprise/host/tracefs"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/vmm"
)

// HostMode says how much of its host a recording captures beside the
// guest's inputs (package hostview).
type HostMode string

const (
	// HostFull records the VMM's timing and hypervisor events, and the
	// host scheduler's view through tracefs (every sched_switch on every
	// CPU, wakeups and migrations of the vCPU threads) when tracefs is
	// available; without it the recording goes on and says so.
	HostFull HostMode = "full"
	HostVMM  HostMode = "vmm" // the VMM's timing and hypervisor events only
	HostOff  HostMode = "off" // no host view
)

// ParseHostMode checks a --host value ("" is HostFull).
func ParseHostMode(s string) (HostMode, error) {
	switch m := HostMode(s); m {
	case "":
		return HostFull, nil
	case HostFull, HostVMM, HostOff:
		return m, nil
	}
	return "", fmt.Errorf("recorder: unknown host mode %q (want full, vmm or off)", s)
}

// hostRecorder feeds a recording's host view into its tape: the VMM's
// records (vmm.Config.Host) and, in HostFull, a tracefs session's.
type hostRecorder struct {
	log      *chunkedLog
	sess     *tracefs.Session // nil without host scheduling
	missing  string           // why host scheduling is not recorded, "" if it is
	comms    map[int]string   // names already logged; tracefs reader goroutine only
	lastNs   int64            // time of the last scheduler event; reader only
	startErr error
}

// newHostRecorder opens the tracefs session of a HostFull recording; a
// host without tracefs is not an error, only a missing part of the view.
func newHostRecorder(mode HostMode, log *chunkedLog) (*hostRecorder, error) {
	h := &hostRecorder{log: log, comms: map[int]string{}}
	if mode != HostFull {
		h.missing = "host scheduling not recorded (--host " + string(mode) + ")"
		return h, nil
	}
	sess, err := tracefs.OpenWith(tracefs.Options{AllSwitches: true})
	var un *tracefs.UnavailableError
	switch {
	case errors.As(err, &un):
		h.missing = "host scheduling not recorded: " + un.Error()
		return h, nil
	case err != nil:
		return nil, fmt.Errorf("recorder: host tracing: %w", err)
	}
	h.sess = sess
	return h, nil
}

// Missing says what the host view lacks ("" if nothing).
func (h *hostRecorder) Missing() string { return h.missing }

// hostRecorder is the machine's HostObserver: what the VMM sees becomes
// the host view's records. Host scheduling starts with the recording's
// start record, so that no record precedes it, and follows the vCPU thread
// as soon as it exists.
var _ vmm.HostObserver = (*hostRecorder)(nil)

func (h *hostRecorder) Started(mono int64) {
	h.log.host(&hostview.Record{Kind: hostview.KindStart, Time: mono, Text: h.missing})
	if h.sess != nil {
		h.startErr = h.sess.Start(tracefs.Handlers{Switch: h.onSwitch, Wakeup: h.onWakeup, Migrate: h.onMigrate, Lost: h.onLost})
	}
}

func (h *hostRecorder) VCPUThread(at int64, tid uint32) {
	if h.sess != nil && h.startErr == nil {
		h.startErr = h.sess.SetTIDs([]int{int(tid)})
	}
	h.log.host(&hostview.Record{Kind: hostview.KindVCPU, Time: at, TID: tid})
}

func (h *hostRecorder) Ran(entry, dur int64, reason kvm.ExitReason, interrupted bool, exits uint64) {
	code := uint32(reason)
	if interrupted {
		code = hostview.ExitInterrupted
	}
	h.log.host(&hostview.Record{Kind: hostview.KindRun, Time: entry, Dur: dur, Exit: exits, Code: code})
}

func (h *hostRecorder) Idled(start, dur int64, exits uint64) {
	h.log.host(&hostview.Record{Kind: hostview.KindIdle, Time: start, Dur: dur, Exit: exits})
}

// hypervisorKinds maps the machine's events to the host view's kinds.
var hypervisorKinds = [...]hostview.Kind{
	vmm.IRQRaised: hostview.KindIRQ, vmm.Injected: hostview.KindInject,
	vmm.TimerSet: hostview.KindTimerSet, vmm.TimerFired: hostview.KindTimerFire,
}

func (h *hostRecorder) Hypervisor(at int64, ev vmm.HypervisorEvent, code uint32, arg uint64) {
	h.log.host(&hostview.Record{Kind: hypervisorKinds[ev], Time: at, Code: code, Arg: arg})
}

// close stops host tracing, after it has delivered what it buffered.
func (h *hostRecorder) close() error {
	if h.sess == nil {
		return nil
	}
	err := errors.Join(h.startErr, h.sess.Close())
	if err != nil {
		return fmt.Errorf("recorder: host tracing: %w", err)
	}
	return nil
}

// stateOf reads the first letter of a sched_switch prev_state ("R+",
// "S", "D|W", ...): anything neither runnable nor dead went to sleep.
var stateOf = map[byte]hostview.State{'R': hostview.StateRunnable, 'X': hostview.StateExited, 'Z': hostview.StateExited}

func (h *hostRecorder) onSwitch(s tracefs.Switch) {
	h.name(s.PrevPID, s.PrevComm)
	h.name(s.NextPID, s.NextComm)
	state := hostview.StateBlocked
	if st, ok := stateOf[firstByte(s.PrevState)]; ok {
		state = st
	}
	h.lastNs = int64(s.Time)
	h.log.host(&hostview.Record{Kind: hostview.KindSwitch, Time: int64(s.Time), CPU: uint32(s.CPU),
		TID: uint32(s.PrevPID), Next: uint32(s.NextPID), Code: uint32(state)})
}

func firstByte(s string) byte {
	if s == "" {
		return 0
	}
	return s[0]
}

func (h *hostRecorder) onWakeup(w tracefs.Wakeup) {
	if w.Waking {
		return // the wakeup proper says where it will run
	}
	h.lastNs = int64(w.Time)
	h.log.host(&hostview.Record{Kind: hostview.KindWakeup, Time: int64(w.Time), CPU: uint32(w.TargetCPU), TID: uint32(w.PID)})
}

func (h *hostRecorder) onMigrate(m tracefs.Migrate) {
	h.lastNs = int64(m.Time)
	h.log.host(&hostview.Record{Kind: hostview.KindMigrate, Time: int64(m.Time), CPU: uint32(m.DestCPU),
		TID: uint32(m.PID), Code: uint32(m.OrigCPU)})
}

func (h *hostRecorder) onLost(l tracefs.Lost) {
	h.log.host(&hostview.Record{Kind: hostview.KindLost, Time: h.lastNs, CPU: uint32(l.CPU), Arg: uint64(l.Count)})
}

// name logs a host thread's name the first time it is seen, and again
// when it changes (exec, prctl).
func (h *hostRecorder) name(tid int, comm string) {
	if tid <= 0 || h.comms[tid] == comm {
		return
	}
	h.comms[tid] = comm
	h.log.host(&hostview.Record{Kind: hostview.KindComm, Time: h.lastNs, TID: uint32(tid), Text: comm})
}

// hostFrameBytes is when the pending host frame is written.
const hostFrameBytes = 64 << 10

// hostLog is the host half of chunkedLog: records collected from the
// vCPU thread, device goroutines and the tracefs reader.
type hostLog struct {
	enc     hostview.Encoder
	records uint64
	err     error // the first record that could not be encoded
}

// host adds a host record, writing the frame when it is full.
func (l *chunkedLog) host(r *hostview.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.hl.enc.Add(r); err != nil {
		if l.hl.err == nil {
			l.hl.err = err
		}
		return
	}
	l.hl.records++
	if len(l.hl.enc.Bytes()) >= hostFrameBytes {
		l.flushHost()
	}
}

// flushHost writes the pending host frame; l.mu is held.
func (l *chunkedLog) flushHost() {
	if l.hl.enc.Len() == 0 {
		return
	}
	_ = l.w.AppendHost(l.hl.enc.Len(), l.hl.enc.Bytes()) // a failing disk shows again at close
	l.hl.enc.Reset()
}
