package vmm

import (
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm/netback"
)

// liveSource takes inputs from the host. Recording (log != nil) also
// places every interrupt at a position replay can find again — right after
// a guest-initiated exit, at a software-branch-counter target, or at the
// first interrupt window after an exit — and logs every input there.
type liveSource struct {
	m              *Machine
	log            EventLog // nil: Live mode
	positionSource tape.PositionSource
	armed          bool   // a branch-counter target is set
	target         uint64 // ...at this count
	met            bool   // ...and the guest has stopped at it
	// stopAsked is when a stop request was first seen (recording).
	stopAsked time.Time
}

// stopGrace bounds how long a recording waits, after a stop request, for a
// point a replay can find again. A guest computing in its kernel, or with
// exit-sync positions and no exits, may never reach one; the recording then
// ends without an end event and replays up to its last event, like one
// whose recorder was killed.
const stopGrace = 2 * time.Second

func (s *liveSource) beforeEntry(stop stopKind) error {
	m, c := s.m, s.m.cpu
	if stop == stopBranch && s.armed {
		s.met = true // classify saw the count at the target
	}
	if m.stopping.Load() {
		if s.log == nil {
			return errStopped
		}
		return s.stopAt(stop)
	}
	vector, ok := m.intc.Next()
	if !ok {
		c.RequestInterruptWindow(false)
		return s.disarm()
	}
	ready := c.ReadyForInterrupt()
	if s.log == nil {
		if !ready {
			c.RequestInterruptWindow(true)
			return nil
		}
		return s.inject(vector, tape.AtExit)
	}
	switch {
	case ready && stop == stopGuestExit:
		return s.inject(vector, tape.AtExit)
	case ready && stop == stopBranch:
		return s.inject(vector, tape.AtBranch)
	case ready && stop == stopWindow:
		return s.inject(vector, tape.AtWindow)
	}
	// Not at a repeatable point: make one — unless the interrupt is a
	// moderated one, which waits for a point the guest reaches anyway.
	if vector == abi.IRQBase+abi.IRQNIC {
		return nil
	}
	switch s.positionSource {
	case tape.SourceSWBC:
		return s.arm()
	case tape.SourceExitSync:
		if stop == stopGuestExit {
			c.RequestInterruptWindow(true)
		}
	}
	return nil
}

// stopAt ends a recording at the first repeatable point after the stop
// request, so a replay can stop at exactly the same place.
func (s *liveSource) stopAt(stop stopKind) error {
	if s.stopAsked.IsZero() {
		s.stopAsked = time.Now()
	}
	if stop == stopGuestExit || stop == stopBranch {
		return errRecordStop // the end is logged here (Machine.endWhere)
	}
	if time.Since(s.stopAsked) > stopGrace {
		return errStopped
	}
	if s.positionSource == tape.SourceSWBC {
		return s.arm()
	}
	return nil
}

// arm sets the branch-counter target one basic block ahead: the guest
// exits at the next CPL3 basic block it enters.
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
func (s *liveSource) arm() error {
	count, err := s.m.ram.Uint64(abi.SWBCCountOff)
	if err != nil {
		return err
	}
	if s.armed && !s.met && count > s.target {
		// The guest went past the target without its hook exiting: it did
		// not see the target the VMM wrote. Harmless here (no event was
		// logged there), fatal in a replay (tapeSource.checkTarget).
		s.m.stats.SWBCMissed++
	}
	if s.armed && !s.met && count <= s.target {
		if count == s.target {
			s.m.stats.SWBCKickedAtTarget++
		}
		return nil
	}
	s.armed, s.met, s.target = true, false, count+1
	return s.m.SetBranchTarget(s.target)
}

func (s *liveSource) disarm() error {
	if !s.armed {
		return nil
	}
	s.armed = false
	return s.m.SetBranchTarget(noTarget)
}

func (s *liveSource) inject(vector uint8, where tape.Where) error {
	m := s.m
	var clock uint64
	if vector == abi.IRQBase+abi.IRQTimer {
		clock = uint64(m.now())
	}
	if err := s.disarm(); err != nil {
		return err
	}
	// The event is built before injecting (the registers and exit of this
	// point), its payload after (what the interrupt delivered).
	var e *tape.Event
	if s.log != nil {
		e = m.event(tape.KindInterrupt, where)
	}
	var rx []netback.Frame
	if vector == abi.IRQBase+abi.IRQNIC && m.net != nil {
		rx = m.net.Take(m.nic.RXFree())
	}
	data := make([][]byte, len(rx))
	for i, f := range rx {
		data[i] = f.Data
	}
	digest, err := m.inject(vector, clock, data)
	if err != nil {
		return err
	}
	if len(rx) > 0 && m.net.Backlog() > 0 && m.nic.RXFree() > 0 {
		m.raiseNIC() // more waiting than this delivery took
	}
	if s.log == nil {
		return nil
	}
	// One injection per entry: anything still pending (a moderated NIC
	// interrupt behind a tick) gets the next basic block, or it could wait
	// behind every later tick of a guest that makes no exits.
	if s.positionSource == tape.SourceSWBC && m.intc.Pending() {
		if err := s.arm(); err != nil {
			return err
		}
	}
	e.Vector, e.Value, e.Data = vector, clock, digest
	if err := s.log.Append(e); err != nil {
		return err
	}
	// The frames delivered with the interrupt, at its position.
	for _, f := range rx {
		fe := *e
		fe.Kind, fe.Vector, fe.Value, fe.Data = tape.KindNetRX, 0, uint64(f.At.Sub(m.start)), f.Data
		if err := s.log.Append(&fe); err != nil {
			return err
		}
	}
	return nil
}

func (s *liveSource) netTX(frame []byte) error {
	m := s.m
	if s.log != nil {
		e := m.event(tape.KindNetTX, tape.AtExit)
		e.Value, e.Data = uint64(m.now()), frame
		if err := s.log.Append(e); err != nil {
			return err
		}
	}
	if m.net == nil {
		return nil
	}
	return m.net.Send(frame)
}

func (s *liveSource) portIn(port uint16, data []byte) error {
	if s.log == nil {
		return nil
	}
	e := s.m.event(tape.KindPortIn, tape.AtExit)
	e.Port, e.Data = port, append([]byte(nil), data...)
	return s.log.Append(e)
}

func (s *liveSource) clock() (time.Duration, error) {
	now := s.m.now()
	if s.log != nil {
		e := s.m.event(tape.KindTime, tape.AtExit)
		e.Value = uint64(now)
		if err := s.log.Append(e); err != nil {
			return 0, err
		}
	}
	return now, nil
}

// halt waits, outside KVM_RUN, until an interrupt is pending: the idle time
// a replay skips.
func (s *liveSource) halt() error {
	m := s.m
	if !m.canWake() {
		return m.fault("the guest is idle (HLT) with its timer stopped or masked and nothing else that could wake it")
	}
	t0, idle := time.Now(), m.hostNow()
	for !m.intc.Pending() {
		<-m.wake
		if m.stopping.Load() {
			// Recording: the HLT exit itself is a repeatable stop point.
			break
		}
	}
	m.stats.Halted += time.Since(t0)
	m.hostIdle(idle)
	return nil
}

func (s *liveSource) finish(end *tape.End, runErr error) error {
	if s.log == nil || end == nil {
		return runErr
	}
	e := s.m.event(tape.KindEnd, s.m.endWhere())
	e.End = end
	if err := s.log.Append(e); err != nil {
		return err
	}
	return runErr
}
