package recorder

import (
	"crypto/rand"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

// EventLog receives a recording's events in order.
type EventLog interface {
	Append(*tape.Event) error
}

// engine takes the machine's inputs from the host, places every
// interrupt at a position a replay can find again — right after a
// guest-initiated exit, at a software-branch-counter target, or at the
// first interrupt window after an exit — and logs every input there.
type engine struct {
	m      *vmm.Machine
	log    EventLog
	source tape.PositionSource
	armed  bool   // a branch-counter target is set
	target uint64 // ...at this count
	met    bool   // ...and the guest has stopped at it
	// stopAsked is when a stop request was first seen.
	stopAsked time.Time
	ckpt      *checkpoints // nil: none taken
	// sent are the frames the guest sent while an interrupt was being
	// delivered (a Linux program's door messages): logged after the
	// interrupt, where a replay meets them; nil outside a delivery.
	sent *[]*tape.Event
}

// stopGrace bounds how long a recording waits, after a stop request, for a
// point a replay can find again. A guest computing in its kernel, or with
// exit-sync positions and no exits, may never reach one; the recording then
// ends without an end event and replays up to its last event, like one
// whose recorder was killed.
const stopGrace = 2 * time.Second

func (e *engine) Attach(m *vmm.Machine) error { e.m = m; return nil }

func (e *engine) BeforeEntry(stop vmm.Stop) error {
	m := e.m
	if err := e.ckpt.at(m, stop); err != nil {
		return err
	}
	if stop == vmm.StopBranch && e.armed {
		e.met = true // the machine saw the count at the target
	}
	if m.Stopping() {
		return e.stopAt(stop)
	}
	vector, ok := m.NextInterrupt()
	if !ok {
		m.RequestInterruptWindow(false)
		return e.disarm()
	}
	if m.ReadyForInterrupt() {
		switch stop {
		case vmm.StopGuestExit:
			return e.inject(vector, tape.AtExit)
		case vmm.StopBranch:
			return e.inject(vector, tape.AtBranch)
		case vmm.StopWindow:
			return e.inject(vector, tape.AtWindow)
		}
	}
	// Not at a repeatable point: make one — unless the interrupt is a
	// moderated one, which waits for a point the guest reaches anyway.
	if vector == abi.IRQBase+abi.IRQNIC {
		return nil
	}
	switch e.source {
	case tape.SourceSWBC:
		return e.arm()
	case tape.SourceExitSync:
		if stop == vmm.StopGuestExit {
			m.RequestInterruptWindow(true)
		}
	}
	return nil
}

// stopAt ends a recording at the first repeatable point after the stop
// request, so a replay can stop at exactly the same place.
func (e *engine) stopAt(stop vmm.Stop) error {
	if e.stopAsked.IsZero() {
		e.stopAsked = time.Now()
	}
	if stop == vmm.StopGuestExit || stop == vmm.StopBranch {
		return vmm.ErrEndHere // the end is logged here (Finish)
	}
	if time.Since(e.stopAsked) > stopGrace {
		return vmm.ErrStopped
	}
	if e.source == tape.SourceSWBC {
		return e.arm()
	}
	return nil
}

// arm sets the branch-counter target one count ahead: the guest exits at
// the next count of its CPL3 code.
//
// A target already set stays until the guest has stopped at it, even when
// the count already equals it. The hook stores the count, compares it with
// the target, and then exits without reading the target again, so a kick
// can find the guest between that compare and its exit: a few instructions
// wide, but it lasts as long as the host keeps the vCPU thread off its CPU
// when it is preempted right there. Moving the target then turns the exit
// that follows into one at a count the VMM no longer expects. (It used to:
// the exit was counted as the guest's own and the pending interrupt was
// logged at it, a point no replay reaches; the replay diverged at the
// guest's next exit, same ordinal, a branch count far past the recorded
// one.) A target the count has passed is set again rather than waited for
// forever.
func (e *engine) arm() error {
	count, err := e.m.BranchCount()
	if err != nil {
		return err
	}
	stats := e.m.Stats()
	if e.armed && !e.met && count > e.target {
		// The guest went past the target without its hook exiting: it did
		// not see the target the VMM wrote. Harmless here (no event was
		// logged there), fatal in a replay.
		stats.SWBCMissed++
	}
	if e.armed && !e.met && count <= e.target {
		if count == e.target {
			stats.SWBCKickedAtTarget++
		}
		return nil
	}
	e.armed, e.met, e.target = true, false, count+1
	return e.m.SetBranchTarget(e.target)
}

func (e *engine) disarm() error {
	if !e.armed {
		return nil
	}
	e.armed = false
	return e.m.SetBranchTarget(vmm.NoBranchTarget)
}

func (e *engine) inject(vector uint8, where tape.Where) error {
	if err := e.disarm(); err != nil {
		return err
	}
	// The event is built before injecting (the registers and exit of this
	// point), its payload after (what the interrupt delivered).
	ev := e.event(tape.KindInterrupt, where)
	var sent []*tape.Event
	e.sent = &sent
	d, err := e.m.Deliver(vector)
	e.sent = nil
	if err != nil {
		return err
	}
	// One injection per entry: anything still pending (a moderated NIC
	// interrupt behind a tick) gets the next basic block, or it could wait
	// behind every later tick of a guest that makes no exits.
	if e.source == tape.SourceSWBC && e.m.InterruptPending() {
		if err := e.arm(); err != nil {
			return err
		}
	}
	ev.Vector, ev.Value, ev.Data = vector, uint64(d.Clock), d.Digest
	if err := e.append(ev); err != nil {
		return err
	}
	// The frames delivered with the interrupt, at its position.
	for _, f := range d.Frames {
		fe := *ev
		fe.Kind, fe.Vector, fe.Value, fe.Data = tape.KindNetRX, 0, uint64(e.m.RunTime(f.At)), f.Data
		if err := e.append(&fe); err != nil {
			return err
		}
	}
	for _, s := range sent {
		if err := e.append(s); err != nil {
			return err
		}
	}
	return nil
}

// event builds an event at the current position with the register digest
// and the exit the guest is stopped at.
func (e *engine) event(kind tape.Kind, where tape.Where) *tape.Event {
	m := e.m
	p := m.Position()
	return &tape.Event{
		Kind:       kind,
		Pos:        tape.Position{Exit: p.Exit, Branch: p.Branch},
		Where:      where,
		HostTime:   m.Now(),
		ExitReason: uint8(m.ExitReason()),
		Port:       m.ExitPort(),
		Digest:     m.EventDigest(),
	}
}

func (e *engine) GuestExit() error { return nil }

// QuietExit lets a companion serve an exit (vmm.BesideEngine) when
// BeforeEntry would do nothing there: no interrupt to place (nor a
// branch target armed for one), no checkpoint due.
func (e *engine) QuietExit(vmm.Position) bool {
	return !e.m.InterruptPending() && !e.armed && !e.ckpt.dueAt(e.m)
}

func (e *engine) NetTX(frame []byte) error {
	ev := e.event(tape.KindNetTX, tape.AtExit)
	ev.Value, ev.Data = uint64(e.m.Now()), frame
	if e.sent != nil {
		*e.sent = append(*e.sent, ev)
		return nil
	}
	return e.append(ev)
}

func (e *engine) PortIn(port uint16, data []byte) error {
	ev := e.event(tape.KindPortIn, tape.AtExit)
	ev.Port, ev.Data = port, append([]byte(nil), data...)
	return e.append(ev)
}

func (e *engine) Clock() (time.Duration, error) {
	now := e.m.Now()
	ev := e.event(tape.KindTime, tape.AtExit)
	ev.Value = uint64(now)
	if err := e.append(ev); err != nil {
		return 0, err
	}
	return now, nil
}

// Entropy gives the guest host randomness and logs it, a tape.MaxEntropy
// bytes an event.
func (e *engine) Entropy(b []byte) error {
	if _, err := rand.Read(b); err != nil {
		return err
	}
	for rest := b; len(rest) > 0; {
		n := min(len(rest), tape.MaxEntropy)
		ev := e.event(tape.KindEntropy, tape.AtExit)
		ev.Data = append([]byte(nil), rest[:n]...)
		if err := e.append(ev); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// ObserveFile asks the host about its files for a Linux program and logs
// the answer at this exit (linux.Observer).
func (e *engine) ObserveFile(f *tape.FileFact, ask func(*tape.FileFact) error) error {
	if err := ask(f); err != nil {
		return err
	}
	ev := e.event(tape.KindFile, tape.AtExit)
	ev.Fact = f
	return e.append(ev)
}

// Halt waits, outside KVM_RUN, until an interrupt is pending: the idle
// time a replay skips.
func (e *engine) Halt() error { return e.m.Idle() }

// Breakpoint: a recording plants none, so every int3 is the guest's own.
func (e *engine) Breakpoint(*kvm.Regs) (uint64, bool, error) { return 0, false, nil }

// ProbeExit: nor does it patch probe exits, so an out to the probe port
// is the guest's own.
func (e *engine) ProbeExit(*kvm.Regs) (uint64, bool, error) { return 0, false, nil }

func (e *engine) BeforeEnd() error { return nil }

// Finish logs how the guest ended, where it ended.
func (e *engine) Finish(end *vmm.End, runErr error) error {
	if end == nil {
		return runErr
	}
	where := tape.AtExit
	if e.m.LastStop() == vmm.StopBranch {
		where = tape.AtBranch
	}
	ev := e.event(tape.KindEnd, where)
	te := tape.End(*end)
	ev.End = &te
	if err := e.append(ev); err != nil {
		return err
	}
	return runErr
}

// append logs an event, and keeps the checkpoints' view of the tape.
func (e *engine) append(ev *tape.Event) error {
	if err := e.log.Append(ev); err != nil {
		return err
	}
	e.ckpt.logged(e.m, ev)
	return nil
}
