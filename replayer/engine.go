package replayer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/linux"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/door"
)

// engine replays a recording: every input comes from the tape, every
// interrupt is injected at its recorded position, idle time is skipped,
// and each event is checked against the guest's state where it applies.
// It also runs what a replay adds to the recorded run and the recording
// never paid for: probes, samples and the guest's trace ring.
type engine struct {
	m        *vmm.Machine
	script   *script
	target   uint64 // branch-counter target currently set
	applied  uint64 // events consumed
	last     tape.Position
	rtime    tape.RecordClock
	drainErr error // from the trace-ring handler
	// exitDigests: the tape sums an event's registers as the exit left
	// them (vmm.Machine.EventDigest), not as a checkpoint settled them.
	exitDigests bool

	ckpt    *checkpoints  // nil: none written or checked
	probes  *patches      // nil: no probes
	kit     *kitDebug     // a kit guest's debugger, or nil
	linux   *linuxProbes  // a Linux program's probes and mappings, or nil
	kernel  *linux.Kernel // the Linux personality linux is placed in
	sampler *sampler      // nil: no sampling
	trace   *traceRing    // nil: nobody wants the trace ring
	onFrame FrameHandler  // nil: nobody wants the frames
}

func (e *engine) Attach(m *vmm.Machine) error {
	e.m, e.target = m, vmm.NoBranchTarget
	if e.linux != nil {
		e.linux.m, e.linux.recordTime = m, e.recordTime
	}
	if e.sampler != nil {
		if err := e.sampler.attach(m); err != nil {
			return err
		}
	}
	if e.trace != nil {
		e.trace.attach(m)
	}
	// A checkpoint's state replaces boot's (the sampler's next sample
	// included), and its RAM is the recording's: probes patch it after.
	if err := e.ckpt.attach(e); err != nil {
		return err
	}
	if e.probes != nil {
		if err := e.probes.install(m); err != nil {
			return err
		}
	}
	if e.kit != nil {
		return e.kit.attach(m)
	}
	return nil
}

// peek returns the next event; the end of the events (without an end
// event) or tape damage stops the replay there.
func (e *engine) peek() (*tape.Event, error) {
	ev, err := e.script.Peek()
	if err == nil {
		return ev, nil
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("the tape has no end event")
	}
	return nil, &TapeCutError{Events: e.applied, Last: e.last, Cause: err}
}

// consume moves past the next event, which applies now. Trace records
// written before it are drained first, to be timed before it.
func (e *engine) consume() {
	e.drainErr = errors.Join(e.drainErr, e.drainTrace())
	ev, _ := e.script.Next()
	e.applied++
	if ev != nil {
		e.last = ev.Pos
		e.rtime.Advance(ev, e.halts())
	}
}

// halts is how many HLT exits the guest made so far.
func (e *engine) halts() uint64 { return e.m.Stats().Exits[kvm.ExitHLT] }

// recordTime maps a point of the replay to the recorded run's host time.
func (e *engine) recordTime(p vmm.Position) time.Duration {
	next, _ := e.script.Peek()
	return e.rtime.At(tape.Position{Exit: p.Exit, Branch: p.Branch}, next, e.halts())
}

func (e *engine) drainTrace() error {
	if e.trace == nil {
		return nil
	}
	return e.trace.drain(e.recordTime)
}

func (e *engine) BeforeEntry(stop vmm.Stop) error {
	m := e.m
	if m.Stopping() {
		return vmm.ErrStopped
	}
	if e.drainErr != nil {
		return e.drainErr
	}
	if e.ckpt != nil {
		if err := e.ckpt.at(e, stop); err != nil {
			return err
		}
	}
	if err := e.checkTarget(); err != nil {
		return err
	}
	if e.kit != nil {
		if err := e.kit.at(stop); err != nil {
			return err
		}
	}
	if e.sampler != nil {
		if err := e.sampler.at(stop, e.recordTime); err != nil {
			return err
		}
	}
	m.RequestInterruptWindow(false)
	ev, err := e.peek()
	if err != nil {
		return err
	}
	pos := m.Position()
	atExit := stop == vmm.StopGuestExit && pos.Exit == ev.Pos.Exit
	// A branch stop may be a sample's rather than this event's.
	atBranch := stop == vmm.StopBranch && pos.Branch == ev.Pos.Branch
	switch {
	case ev.Kind == tape.KindInterrupt && ev.Where == tape.AtExit && atExit,
		ev.Kind == tape.KindInterrupt && ev.Where == tape.AtBranch && atBranch,
		ev.Kind == tape.KindInterrupt && ev.Where == tape.AtWindow && stop == vmm.StopWindow:
		if err := e.check(ev); err != nil {
			return err
		}
		e.consume()
		rx, err := e.frames(ev)
		if err != nil {
			return err
		}
		digest, err := m.Inject(ev.Vector, time.Duration(ev.Value), rx)
		if err != nil {
			return err
		}
		if !bytes.Equal(digest, ev.Data) {
			return e.diverge(ev, "completion delivered with the interrupt", fmt.Sprintf("%x", ev.Data), fmt.Sprintf("%x", digest))
		}
		// Arm the next event now: its position may come before the
		// guest's next exit.
		return e.arm(vmm.StopKick)
	case ev.Kind == tape.KindEnd && ev.End.Reason == tape.EndInterrupted &&
		(ev.Where == tape.AtExit && atExit || ev.Where == tape.AtBranch && atBranch):
		return vmm.ErrEndHere
	}
	return e.arm(stop)
}

// arm prepares the guest to stop where the next event applies: the
// branch-counter target, or an interrupt window after the right exit.
func (e *engine) arm(stop vmm.Stop) error {
	m := e.m
	ev, err := e.peek()
	if err != nil {
		return err
	}
	exits := m.Position().Exit
	if exits > ev.Pos.Exit {
		return e.diverge(ev, "position", fmt.Sprintf("%v at exit %d", ev.Kind, ev.Pos.Exit),
			fmt.Sprintf("the guest went on to exit %d without reaching it", exits))
	}
	target := vmm.NoBranchTarget
	switch {
	case ev.Where == tape.AtBranch && (ev.Kind == tape.KindInterrupt || ev.Kind == tape.KindEnd):
		target = ev.Pos.Branch
	case ev.Where == tape.AtWindow && stop == vmm.StopGuestExit && exits == ev.Pos.Exit:
		m.RequestInterruptWindow(true)
	}
	if e.sampler != nil {
		target = min(target, e.sampler.next) // the next sample may come first
	}
	return e.setTarget(target)
}

// frames consumes the received frames recorded with the interrupt ev: the
// net-rx events right after it, at its position. A recording takes at
// most a ring's worth per interrupt; a tape that lists more is not one
// this guest's NIC can have produced, and is not collected without bound.
func (e *engine) frames(ev *tape.Event) ([][]byte, error) {
	var rx [][]byte
	for {
		next, err := e.script.Peek()
		if err != nil || next.Kind != tape.KindNetRX || next.Pos != ev.Pos {
			return rx, nil
		}
		switch {
		case ev.Vector != abi.IRQBase+abi.IRQNIC:
			return nil, e.diverge(next, "received frame", "none with a non-NIC interrupt", fmt.Sprintf("one with vector %#x", ev.Vector))
		case len(rx) == abi.NICRing:
			return nil, e.diverge(next, "frames received with one NIC interrupt", fmt.Sprintf("at most %d (the RX ring)", abi.NICRing), "more")
		}
		e.consume()
		rx = append(rx, next.Data)
		if e.onFrame != nil {
			if err := e.onFrame(next.Data, false, vmm.Position{Exit: next.Pos.Exit, Branch: next.Pos.Branch}, time.Duration(next.Value)); err != nil {
				return nil, err
			}
		}
	}
}

// checkTarget stops a replay whose guest went past the branch-counter
// target without its hook exiting there: the event or sample it was set for
// is lost, and without this check the replay would only notice at the
// guest's next exit, far past it. The count only grows and the hook meets
// any target at or above the count it sees, so this means a target set
// behind the count, or a guest that did not see the target the VMM wrote.
func (e *engine) checkTarget() error {
	if e.target == vmm.NoBranchTarget {
		return nil
	}
	count, err := e.m.BranchCount()
	if err != nil || count <= e.target {
		return err
	}
	e.m.Stats().SWBCMissed++
	ev, err := e.peek()
	if err != nil {
		return err
	}
	return e.diverge(ev, "branch-counter target", fmt.Sprintf("a stop at branch %d", e.target),
		fmt.Sprintf("the guest at branch %d, past it without having stopped", count))
}

func (e *engine) setTarget(t uint64) error {
	if e.target == t {
		return nil
	}
	e.target = t
	return e.m.SetBranchTarget(t)
}

func (e *engine) GuestExit() error { return e.drainTrace() }

// QuietExit lets a companion serve the exit at at (vmm.BesideEngine) when
// the replay adds nothing to the recorded run there — no kit probes,
// samples, trace ring or debugger, no checkpoint to take or check (a Linux
// program's probes are int3s and its mappings come from calls that are
// never served beside: both leave the exits alone) — and the tape
// places nothing there: its next event comes later, or is an input the
// exit's own handling takes (a clock read, a file), not an interrupt or
// the end.
func (e *engine) QuietExit(at vmm.Position) bool {
	if e.probes != nil || e.kit != nil || e.sampler != nil || e.trace != nil || e.drainErr != nil || !e.ckpt.quietAt(e, at) {
		return false
	}
	ev, err := e.script.Peek()
	if err != nil {
		return false
	}
	switch {
	case ev.Pos.Exit > at.Exit:
		return true
	case ev.Pos.Exit < at.Exit:
		return false // past it: the vCPU loop tells the divergence
	}
	return ev.Kind != tape.KindInterrupt && ev.Kind != tape.KindEnd && ev.Kind != tape.KindNetRX
}

// NetTX checks a frame the guest sent against the one it sent when
// recorded; nothing is sent. A Linux program's are door messages, named
// by connection and offset.
func (e *engine) NetTX(frame []byte) error {
	ev, err := e.input(tape.KindNetTX, e.m.ExitPort(), 0)
	if err != nil {
		return err
	}
	switch {
	case bytes.Equal(ev.Data, frame):
		return nil
	case e.kernel != nil:
		return e.diverge(ev, "message sent through a published port", door.Describe(ev.Data), door.Describe(frame))
	}
	return e.diverge(ev, "sent frame", fmt.Sprintf("%d bytes, %x…", len(ev.Data), prefix(ev.Data)), fmt.Sprintf("%d bytes, %x…", len(frame), prefix(frame)))
}

func prefix(b []byte) []byte { return b[:min(len(b), 16)] }

// tap is the machine's Config.Tap for an OnFrame handler: each frame the
// guest sends with the recording's time of the position it was sent at.
func (e *engine) tap(on FrameHandler) func([]byte) error {
	if on == nil {
		return nil
	}
	return func(frame []byte) error {
		pos := e.m.Position()
		return on(frame, true, pos, e.recordTime(pos))
	}
}

// input consumes the event that must answer the guest's input request at
// the current exit.
func (e *engine) input(kind tape.Kind, port uint16, size int) (*tape.Event, error) {
	ev, err := e.peek()
	if err != nil {
		return nil, err
	}
	exits := e.m.Position().Exit
	want := fmt.Sprintf("%v at exit %d", kind, exits)
	if ev.Kind != kind || ev.Pos.Exit != exits || ev.Port != port || (kind == tape.KindPortIn || kind == tape.KindEntropy) && len(ev.Data) != size {
		return nil, e.diverge(ev, "input", fmt.Sprintf("%v at exit %d", ev.Kind, ev.Pos.Exit), "the guest asked for "+want)
	}
	if err := e.check(ev); err != nil {
		return nil, err
	}
	e.consume()
	return ev, nil
}

func (e *engine) PortIn(port uint16, data []byte) error {
	ev, err := e.input(tape.KindPortIn, port, len(data))
	if err != nil {
		return err
	}
	copy(data, ev.Data)
	return nil
}

// Entropy gives the guest the random bytes it got when recorded, in the
// events they were logged in.
func (e *engine) Entropy(b []byte) error {
	for rest := b; len(rest) > 0; {
		n := min(len(rest), tape.MaxEntropy)
		ev, err := e.input(tape.KindEntropy, e.m.ExitPort(), n)
		if err != nil {
			return err
		}
		rest = rest[copy(rest, ev.Data):]
	}
	return nil
}

// ObserveFile gives a Linux program the answer the host gave about its
// files when recorded, never asking the host (linux.Observer): the
// question must be the one recorded.
func (e *engine) ObserveFile(f *tape.FileFact, _ func(*tape.FileFact) error) error {
	ev, err := e.input(tape.KindFile, e.m.ExitPort(), 0)
	if err != nil {
		return err
	}
	if ev.Fact.Op != f.Op || ev.Fact.Path != f.Path {
		return e.diverge(ev, "file", fmt.Sprintf("%v %s", ev.Fact.Op, ev.Fact.Path), fmt.Sprintf("the program asked the host to %v %s", f.Op, f.Path))
	}
	*f = *ev.Fact
	return nil
}

func (e *engine) Clock() (time.Duration, error) {
	ev, err := e.input(tape.KindTime, e.m.ExitPort(), 0)
	if err != nil {
		return 0, err
	}
	return time.Duration(ev.Value), nil
}

// Halt does not wait: the interrupt that ended this idle period in the
// recording is the next event, injected right away.
func (e *engine) Halt() error {
	ev, err := e.peek()
	if err != nil {
		return err
	}
	exits := e.m.Position().Exit
	wakes := ev.Pos.Exit == exits && ev.Where == tape.AtExit &&
		(ev.Kind == tape.KindInterrupt || ev.Kind == tape.KindEnd)
	if !wakes {
		return e.diverge(ev, "idle", fmt.Sprintf("%v at exit %d", ev.Kind, ev.Pos.Exit),
			fmt.Sprintf("the guest went idle at exit %d with nothing on the tape to wake it", exits))
	}
	return nil
}

func (e *engine) Breakpoint(regs *kvm.Regs) (uint64, bool, error) {
	switch {
	case e.kit != nil:
		return e.kit.hit(regs)
	case e.probes != nil:
		return e.probes.hit(e.m, regs, e.recordTime)
	}
	return 0, false, nil
}

func (e *engine) ProbeExit(regs *kvm.Regs) (uint64, bool, error) {
	if e.probes == nil {
		return 0, false, nil
	}
	return e.probes.exit(e.m, regs, e.recordTime)
}

func (e *engine) BeforeEnd() error {
	switch {
	case e.kernel != nil:
		return e.kernel.RemoveBreakpoints()
	case e.probes != nil:
		return e.probes.remove(e.m.RAM())
	case e.kit != nil:
		return e.kit.remove(e.m.RAM())
	}
	return nil
}

// Finish compares how the replay ended with how the recording did.
func (e *engine) Finish(end *vmm.End, runErr error) error {
	if errors.Is(runErr, errSegmentEnd) {
		return runErr // the next segment drains the trace ring from here
	}
	if err := e.drainTrace(); err != nil && runErr == nil {
		runErr = err
	}
	var div *DivergenceError
	var cut *TapeCutError
	if errors.As(runErr, &div) || errors.As(runErr, &cut) || errors.Is(runErr, vmm.ErrStopped) || end == nil {
		return runErr
	}
	ev, err := e.peek()
	if err != nil {
		return err
	}
	if ev.Kind != tape.KindEnd {
		return e.diverge(ev, "end", fmt.Sprintf("%v at exit %d", ev.Kind, ev.Pos.Exit),
			fmt.Sprintf("the guest ended (%s) at exit %d", end.Reason, e.m.Position().Exit))
	}
	if err := e.check(ev); err != nil {
		return err
	}
	want, got := ev.End, (*tape.End)(end)
	switch {
	case want.Reason != got.Reason || want.Status != got.Status || want.Fault != got.Fault:
		return e.diverge(ev, "end", want.Summary(), got.Summary())
	case want.ConsoleBytes != got.ConsoleBytes || want.ConsoleHash != got.ConsoleHash:
		return e.diverge(ev, "console output", fmt.Sprintf("%d bytes, sha256 %x", want.ConsoleBytes, want.ConsoleHash[:8]),
			fmt.Sprintf("%d bytes, sha256 %x", got.ConsoleBytes, got.ConsoleHash[:8]))
	case want.RAMHash != got.RAMHash:
		return e.diverge(ev, "RAM hash", fmt.Sprintf("%x", want.RAMHash[:8]), fmt.Sprintf("%x", got.RAMHash[:8]))
	}
	e.consume()
	return nil
}
