package recorder

import (
	"errors"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/kvm"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/devices"

	"time"
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
	return m.Paused(func() error { return c.take(m, now, stop) })
}

// diskBusy reports whether err is a snapshot refused because the disk has
// requests in flight: the checkpoint is taken at a later stop. A replay
// has the same requests in flight at the same stops.
func diskBusy(err error) bool { return errors.Is(err, devices.ErrDiskBusy) }

// take writes a checkpoint of the machine as it is now.
func (c *checkpoints) take(m *vmm.Machine, now time.Duration, stop vmm.Stop) error {
	snap, err := m.Snapshot()
	if diskBusy(err) {
		return nil
	}
	if err != nil {
		return err
	}
	disk, err := checkpoint.DiskOf(m)
	if err != nil {
		return err
	}
	ramHash, err := m.HashRAM()
	if err != nil {
		return err
	}
	target, err := m.RAM().Uint64(abi.SWBCTargetOff)
	if err != nil {
		return err
	}
	// The replay's trace-ring cursor: it drains the ring at every exit,
	// and none has been written since this one.
	st := checkpoint.EngineState{Applied: c.applied, Last: c.last, Target: target, Clock: c.clock, TraceDrained: m.TraceHead()}
	cp := &checkpoint.Checkpoint{Time: now, Events: c.applied, Pos: m.Position(), Stop: stop, Machine: snap, Engine: st,
		RAMHash: ramHash, Digest: checkpoint.Digest(m.RegsDigest())}
	sum, err := c.w.Take(cp, m.RAM().Bytes(), disk)
	if err != nil {
		return err
	}
	c.taken = append(c.taken, sum)
	c.due.Taken(now)
	return nil
}
