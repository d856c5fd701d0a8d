package recorder

import (
	"errors"
	"fmt"
	"time"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

// checkpoints are the ones a recording takes (Options.CheckpointEvery):
// the state a replay of the tape has at the same stop, so that the first
// replay can already start anywhere, or be split across machines. A
// replay passing one checks RAM and registers against it.
//
// They are taken at the guest's own exits only (every replay stops there
// in the same state), at the start of BeforeEntry, before an interrupt
// is injected: where a replay takes its own.
type checkpoints struct {
	w     *checkpoint.Writer
	due   checkpoint.Schedule
	taken []checkpoint.Summary
	// skipped says when and why a due checkpoint was not taken.
	skipped []string
	// What a replay has done with the tape so far, kept as the events
	// are appended: the events applied, the last one's position, the
	// record clock over them.
	applied uint64
	last    tape.Position
	clock   tape.RecordClock
}

// logged is told of every event the recording appends.
func (c *checkpoints) logged(m *vmm.Machine, ev *tape.Event) {
	if c == nil {
		return
	}
	c.applied++
	c.last = ev.Pos
	c.clock.Advance(ev, m.Stats().Exits[kvm.ExitHLT])
}

// at takes a checkpoint at this stop if one is due.
func (c *checkpoints) at(m *vmm.Machine, stop vmm.Stop) error {
	if c == nil || stop != vmm.StopGuestExit {
		return nil
	}
	now := m.Now()
	if !c.due.Due(now) {
		return nil
	}
	return m.Paused(func() error { return c.take(m, now) })
}

// dueAt reports whether a checkpoint is due at the machine's next guest
// exit.
func (c *checkpoints) dueAt(m *vmm.Machine) bool { return c != nil && c.due.Due(m.Now()) }

// take writes a checkpoint of the machine as it is now.
func (c *checkpoints) take(m *vmm.Machine, now time.Duration) error {
	target, err := m.RAM().Uint64(abi.SWBCTargetOff)
	if err != nil {
		return err
	}
	// The replay's trace-ring cursor: it drains the ring at every exit,
	// and none has been written since this one.
	st := checkpoint.EngineState{Applied: c.applied, Last: c.last, Target: target, Clock: c.clock, TraceDrained: m.TraceHead()}
	sum, ok, err := c.w.Capture(m, now, st)
	var skip *checkpoint.SkipError
	if errors.As(err, &skip) {
		c.skipped = append(c.skipped, fmt.Sprintf("record time %v: %s", now.Round(time.Millisecond), skip.Why))
		c.due.Taken(now) // the next when due: not at every exit until then
		return nil
	}
	if !ok {
		return err
	}
	c.taken = append(c.taken, sum)
	c.due.Taken(now)
	return nil
}
