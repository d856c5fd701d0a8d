package vmm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/tape"
)

// tapeSource replays a recording: every input comes from the tape, every
// interrupt is injected at its recorded position, idle time is skipped, and
// each event is checked against the guest's state where it applies.
type tapeSource struct {
	m        *Machine
	script   EventScript
	target   uint64 // branch-counter target currently set
	applied  uint64 // events consumed
	last     tape.Position
	rtime    recordClock
	drainErr error // from the trace-ring handler
}

func newTapeSource(m *Machine, script EventScript) *tapeSource {
	return &tapeSource{m: m, script: script, target: noTarget}
}

// peek returns the next event; the end of the events (without an end
// event) or tape damage stops the replay there.
func (s *tapeSource) peek() (*tape.Event, error) {
	ev, err := s.script.Peek()
	if err == nil {
		return ev, nil
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("the tape has no end event")
	}
	return nil, &TapeCutError{Events: s.applied, Last: s.last, Cause: err}
}

// consume moves past the next event, which applies now. Trace records
// written before it are drained first, to be timed before it.
func (s *tapeSource) consume() {
	s.drainErr = errors.Join(s.drainErr, s.m.drainTrace())
	ev, _ := s.script.Next()
	s.applied++
	if ev != nil {
		s.last = ev.Pos
		s.rtime.advance(ev, s.m.stats.Exits[kvm.ExitHLT])
	}
}

func (s *tapeSource) beforeEntry(stop stopKind) error {
	m := s.m
	if m.stopping.Load() {
		return errStopped
	}
	if s.drainErr != nil {
		return s.drainErr
	}
	if err := s.checkTarget(); err != nil {
		return err
	}
	if stop == stopKick && m.sampleDue.CompareAndSwap(true, false) {
		if err := m.takeSample(false); err != nil {
			return err
		}
	}
	m.cpu.RequestInterruptWindow(false)
	if stop == stopBranch && m.sampleAt != 0 {
		if count, _ := m.ram.Uint64(abi.SWBCCountOff); count == m.sampleAt {
			if err := m.takeSample(true); err != nil {
				return err
			}
			m.sampleAt += m.cfg.SampleEvery
		}
	}
	ev, err := s.peek()
	if err != nil {
		return err
	}
	atExit := stop == stopGuestExit && m.exits == ev.Pos.Exit
	// A branch stop may be a sample's rather than this event's.
	atBranch := stop == stopBranch && m.position().Branch == ev.Pos.Branch
	switch {
	case ev.Kind == tape.KindInterrupt && ev.Where == tape.AtExit && atExit,
		ev.Kind == tape.KindInterrupt && ev.Where == tape.AtBranch && atBranch,
		ev.Kind == tape.KindInterrupt && ev.Where == tape.AtWindow && stop == stopWindow:
		if err := s.check(ev); err != nil {
			return err
		}
		s.consume()
		rx, err := s.frames(ev)
		if err != nil {
			return err
		}
		digest, err := m.inject(ev.Vector, ev.Value, rx)
		if err != nil {
			return err
		}
		if !bytes.Equal(digest, ev.Data) {
			return s.diverge(ev, "completion delivered with the interrupt", fmt.Sprintf("%x", ev.Data), fmt.Sprintf("%x", digest))
		}
		// Arm the next event now: its position may come before the
		// guest's next exit.
		return s.arm(stopKick)
	case ev.Kind == tape.KindEnd && ev.End.Reason == tape.EndInterrupted &&
		(ev.Where == tape.AtExit && atExit || ev.Where == tape.AtBranch && atBranch):
		return errReplayEnd
	}
	return s.arm(stop)
}

// arm prepares the guest to stop where the next event applies: the
// branch-counter target, or an interrupt window after the right exit.
func (s *tapeSource) arm(stop stopKind) error {
	m := s.m
	ev, err := s.peek()
	if err != nil {
		return err
	}
	if m.exits > ev.Pos.Exit {
		return s.diverge(ev, "position", fmt.Sprintf("%v at exit %d", ev.Kind, ev.Pos.Exit),
			fmt.Sprintf("the guest went on to exit %d without reaching it", m.exits))
	}
	target := noTarget
	switch {
	case ev.Where == tape.AtBranch && (ev.Kind == tape.KindInterrupt || ev.Kind == tape.KindEnd):
		target = ev.Pos.Branch
	case ev.Where == tape.AtWindow && stop == stopGuestExit && m.exits == ev.Pos.Exit:
		m.cpu.RequestInterruptWindow(true)
	}
	if m.sampleAt != 0 {
		target = min(target, m.sampleAt) // the next sample may come first
	}
	return s.setTarget(target)
}

// frames consumes the received frames recorded with the interrupt ev: the
// net-rx events right after it, at its position. A recording takes at
// most a ring's worth per interrupt; a tape that lists more is not one
// this guest's NIC can have produced, and is not collected without bound.
func (s *tapeSource) frames(ev *tape.Event) ([][]byte, error) {
	var rx [][]byte
	for {
		next, err := s.script.Peek()
		if err != nil || next.Kind != tape.KindNetRX || next.Pos != ev.Pos {
			return rx, nil
		}
		switch {
		case ev.Vector != abi.IRQBase+abi.IRQNIC:
			return nil, s.diverge(next, "received frame", "none with a non-NIC interrupt", fmt.Sprintf("one with vector %#x", ev.Vector))
		case len(rx) == abi.NICRing:
			return nil, s.diverge(next, "frames received with one NIC interrupt", fmt.Sprintf("at most %d (the RX ring)", abi.NICRing), "more")
		}
		s.consume()
		rx = append(rx, next.Data)
	}
}

// netTX checks a frame the guest sent against the one it sent when
// recorded; nothing is sent.
func (s *tapeSource) netTX(frame []byte) error {
	ev, err := s.input(tape.KindNetTX, s.m.exitPort(), 0)
	if err != nil {
		return err
	}
	if !bytes.Equal(ev.Data, frame) {
		return s.diverge(ev, "sent frame", fmt.Sprintf("%d bytes, %x…", len(ev.Data), prefix(ev.Data)), fmt.Sprintf("%d bytes, %x…", len(frame), prefix(frame)))
	}
	return nil
}

func prefix(b []byte) []byte { return b[:min(len(b), 16)] }

// checkTarget stops a replay whose guest went past the branch-counter
// target without its hook exiting there: the event or sample it was set for
// is lost, and without this check the replay would only notice at the
// guest's next exit, far past it. The count only grows and the hook meets
// any target at or above the count it sees, so this means a target set
// behind the count, or a guest that did not see the target the VMM wrote.
func (s *tapeSource) checkTarget() error {
	if s.target == noTarget {
		return nil
	}
	count, err := s.m.ram.Uint64(abi.SWBCCountOff)
	if err != nil || count <= s.target {
		return err
	}
	s.m.stats.SWBCMissed++
	ev, err := s.peek()
	if err != nil {
		return err
	}
	return s.diverge(ev, "branch-counter target", fmt.Sprintf("a stop at branch %d", s.target),
		fmt.Sprintf("the guest at branch %d, past it without having stopped", count))
}

func (s *tapeSource) setTarget(t uint64) error {
	if s.target == t {
		return nil
	}
	s.target = t
	return s.m.SetBranchTarget(t)
}

// check compares the guest's state with the recorded one at an event.
func (s *tapeSource) check(ev *tape.Event) error {
	m := s.m
	pos := m.tapePosition()
	switch {
	case pos.Exit != ev.Pos.Exit || pos.Branch != ev.Pos.Branch:
		return s.diverge(ev, "position", fmtPos(ev.Pos), fmtPos(pos))
	case uint8(m.cpu.ExitReason()) != ev.ExitReason || m.exitPort() != ev.Port:
		return s.diverge(ev, "exit", fmtExit(ev.ExitReason, ev.Port), fmtExit(uint8(m.cpu.ExitReason()), m.exitPort()))
	}
	if d := regsDigest(m.cpu.SyncedRegs()); d != ev.Digest {
		return s.diverge(ev, "register digest", fmt.Sprintf("%016x", ev.Digest), fmt.Sprintf("%016x", d))
	}
	return nil
}

// input consumes the event that must answer the guest's input request at
// the current exit.
func (s *tapeSource) input(kind tape.Kind, port uint16, size int) (*tape.Event, error) {
	ev, err := s.peek()
	if err != nil {
		return nil, err
	}
	want := fmt.Sprintf("%v at exit %d", kind, s.m.exits)
	if ev.Kind != kind || ev.Pos.Exit != s.m.exits || ev.Port != port || (kind == tape.KindPortIn && len(ev.Data) != size) {
		return nil, s.diverge(ev, "input", fmt.Sprintf("%v at exit %d", ev.Kind, ev.Pos.Exit), "the guest asked for "+want)
	}
	if err := s.check(ev); err != nil {
		return nil, err
	}
	s.consume()
	return ev, nil
}

func (s *tapeSource) portIn(port uint16, data []byte) error {
	ev, err := s.input(tape.KindPortIn, port, len(data))
	if err != nil {
		return err
	}
	copy(data, ev.Data)
	return nil
}

func (s *tapeSource) clock() (time.Duration, error) {
	ev, err := s.input(tape.KindTime, abi.PortHcall, 0)
	if err != nil {
		return 0, err
	}
	return time.Duration(ev.Value), nil
}

// halt does not wait: the interrupt that ended this idle period in the
// recording is the next event, injected right away.
func (s *tapeSource) halt() error {
	ev, err := s.peek()
	if err != nil {
		return err
	}
	wakes := ev.Pos.Exit == s.m.exits && ev.Where == tape.AtExit &&
		(ev.Kind == tape.KindInterrupt || ev.Kind == tape.KindEnd)
	if !wakes {
		return s.diverge(ev, "idle", fmt.Sprintf("%v at exit %d", ev.Kind, ev.Pos.Exit),
			fmt.Sprintf("the guest went idle at exit %d with nothing on the tape to wake it", s.m.exits))
	}
	return nil
}

// finish compares how the replay ended with how the recording did.
func (s *tapeSource) finish(end *tape.End, runErr error) error {
	if err := s.m.drainTrace(); err != nil && runErr == nil {
		runErr = err
	}
	var div *DivergenceError
	var cut *TapeCutError
	if errors.As(runErr, &div) || errors.As(runErr, &cut) || errors.Is(runErr, errStopped) || end == nil {
		return runErr
	}
	ev, err := s.peek()
	if err != nil {
		return err
	}
	if ev.Kind != tape.KindEnd {
		return s.diverge(ev, "end", fmt.Sprintf("%v at exit %d", ev.Kind, ev.Pos.Exit),
			fmt.Sprintf("the guest ended (%s) at exit %d", end.Reason, s.m.exits))
	}
	if err := s.check(ev); err != nil {
		return err
	}
	want := ev.End
	switch {
	case want.Reason != end.Reason || want.Status != end.Status || want.Fault != end.Fault:
		return s.diverge(ev, "end", want.Summary(), end.Summary())
	case want.ConsoleBytes != end.ConsoleBytes || want.ConsoleHash != end.ConsoleHash:
		return s.diverge(ev, "console output", fmt.Sprintf("%d bytes, sha256 %x", want.ConsoleBytes, want.ConsoleHash[:8]),
			fmt.Sprintf("%d bytes, sha256 %x", end.ConsoleBytes, end.ConsoleHash[:8]))
	case want.RAMHash != end.RAMHash:
		return s.diverge(ev, "RAM hash", fmt.Sprintf("%x", want.RAMHash[:8]), fmt.Sprintf("%x", end.RAMHash[:8]))
	}
	s.consume()
	return nil
}

func (s *tapeSource) diverge(ev *tape.Event, what, want, got string) error {
	return &DivergenceError{Event: s.applied, Kind: ev.Kind, At: ev.Pos, What: what, Expected: want, Found: got, LastGood: s.last}
}
