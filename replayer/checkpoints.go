package replayer

import (
	"errors"
	"fmt"
	"time"

	"github.com/reprise-vm/reprise/checkpoint"
	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

// Checkpoints are taken where every replay stops in the same state: at the
// guest's own exits (one stop per exit ordinal), and at the branch-counter
// stops where a tape event applies (a CPU-bound guest may make no exit
// for seconds). Not at a kick — an arbitrary stop, which Go's own signals
// cause too — nor at a sample's stop, which only some replays make. A
// checkpoint is known by its events applied, position and stop kind.

// checkpoints is a replay's checkpointing: writing one when due (every
// Options.CheckpointEvery of record time), checking the ones a file holds
// as the replay passes them, or, for a debugging session's replay (a
// CheckpointSet's), taking those the session keeps.
type checkpoints struct {
	path  string
	rec   checkpoint.Recording
	w     *checkpoint.Writer
	due   checkpoint.Schedule
	taken []checkpoint.Summary
	// skipped says when and why a due checkpoint was not taken.
	skipped []string
	start   int // 1-based: the checkpoint the replay started from
	until   int // 1-based: the checkpoint the replay ends at (0: the end)

	file  *checkpoint.File
	known []checkpoint.Summary
	check int // the next of known to reach

	// set, instead of file, is a debugging session's: only started from,
	// its checkpoints passed unchecked (each check hashes the whole
	// RAM); the replay ends at untilAt, until's place; keep says where
	// to take one of the session's own.
	set     *CheckpointSet
	untilAt *checkpoint.Summary
	keep    KeepCheckpoint
	// ran is when the replay started or last took a checkpoint of the
	// set's: what replaying here from there cost is the host time since.
	ran time.Time
}

// KeepCheckpoint says whether a debugging session's replay is to take a
// checkpoint at here, a stop where one can be taken: prev is the latest
// the session's set holds before here (nil: none; the replay's start
// from boot), cost what taking the last one took in host time (0: none
// taken yet), ran the host time this replay ran since it started or took
// its last.
type KeepCheckpoint func(prev *checkpoint.Summary, here checkpoint.Summary, cost, ran time.Duration) bool

// errSegmentEnd ends a segment's replay at its last checkpoint.
var errSegmentEnd = errors.New("replayer: the segment's end")

// checkpoints opens the checkpoint file the options name, to write or to
// read (nil: none).
func (o *Options) checkpoints(h *tape.Header) (*checkpoints, error) {
	switch {
	case o.CheckpointSet != nil && (o.Checkpoints != "" || o.CheckpointEvery != 0):
		return nil, errors.New("replayer: a checkpoint set (Options.CheckpointSet) is only started from: no Checkpoints, no CheckpointEvery")
	case o.KeepCheckpoint != nil && (o.CheckpointSet == nil || o.Plan != nil || len(o.Probes) > 0 || o.KitDebugger != nil):
		return nil, errors.New("replayer: checkpoints are kept by a Linux program's debugged replay, into its checkpoint set, without probes")
	case o.Checkpoints == "" && o.CheckpointSet == nil && (o.CheckpointEvery != 0 || o.Start != 0 || o.Until != 0):
		return nil, errors.New("replayer: checkpoints need a checkpoint file (Options.Checkpoints)")
	case o.Checkpoints == "" && o.CheckpointSet == nil:
		return nil, nil
	case o.CheckpointEvery < 0 || o.Start < 0:
		return nil, errors.New("replayer: negative checkpoint interval or start")
	case o.CheckpointEvery != 0 && (o.Start != 0 || o.Until != 0):
		return nil, errors.New("replayer: a replay from or to a checkpoint does not write checkpoints")
	case o.Until != 0 && o.Until <= o.Start && o.CheckpointSet == nil:
		return nil, fmt.Errorf("replayer: a segment from checkpoint %d to checkpoint %d is empty", o.Start, o.Until)
	case o.CheckpointEvery != 0 && (o.Plan != nil || len(o.Probes) > 0):
		return nil, errors.New("replayer: checkpoints are taken by a replay without probes (their int3s are in RAM)")
	}
	c := &checkpoints{due: checkpoint.Schedule{Every: o.CheckpointEvery}, path: o.Checkpoints, start: o.Start, until: o.Until, rec: checkpoint.RecordingOf(h)}
	if o.CheckpointEvery != 0 {
		return c, nil // created at attach, when RAM's size is known
	}
	if c.set = o.CheckpointSet; c.set != nil {
		c.keep, c.ran = o.KeepCheckpoint, time.Now()
		all := c.set.Checkpoints()
		if max(o.Start, o.Until) > len(all) {
			return nil, fmt.Errorf("replayer: the session has %d checkpoints, no checkpoint %d", len(all), max(o.Start, o.Until))
		}
		if o.Until > 0 {
			c.untilAt = &all[o.Until-1]
		}
		return c, nil
	}
	f, err := checkpoint.Open(o.Checkpoints, c.rec)
	if err != nil {
		return nil, err
	}
	c.file = f
	c.known = c.file.Checkpoints()
	if max(o.Start, o.Until) > len(c.known) {
		err := fmt.Errorf("replayer: %s has %d checkpoints, no checkpoint %d", c.path, len(c.known), max(o.Start, o.Until))
		return nil, errors.Join(err, c.close())
	}
	return c, nil
}

// attach creates the file to write, or resumes from the start checkpoint.
func (c *checkpoints) attach(e *engine) error {
	if c == nil {
		return nil
	}
	if c.due.Every != 0 {
		w, err := checkpoint.Create(c.path, c.rec)
		if err != nil {
			return err
		}
		c.w = w
		return nil
	}
	if c.start > 0 {
		return e.resume(c, c.start-1)
	}
	return nil
}

// close finishes the file.
func (c *checkpoints) close() error {
	if c == nil {
		return nil
	}
	var err error
	if c.w != nil {
		err = c.w.Close()
		c.w = nil
	}
	if c.file != nil {
		err = errors.Join(err, c.file.Close())
	}
	c.file = nil
	return err
}

// at takes or checks a checkpoint where the replay stopped.
func (c *checkpoints) at(e *engine, stop vmm.Stop) error {
	m := e.m
	pos := m.Position()
	switch stop {
	case vmm.StopGuestExit:
	case vmm.StopBranch:
		ev, err := e.peek()
		if err != nil || ev.Where != tape.AtBranch || ev.Pos.Exit != pos.Exit || ev.Pos.Branch != pos.Branch {
			return nil
		}
	default:
		return nil
	}
	if c.set != nil {
		return c.inSet(e, pos, stop)
	}
	for c.file != nil && c.check < len(c.known) && c.known[c.check].Events < e.applied {
		c.check++ // passed between two exits: a replay started after it
	}
	if k := c.check; c.file != nil && k < len(c.known) && c.known[k].Events == e.applied && c.known[k].Pos == pos && c.known[k].Stop == stop {
		if err := c.verify(e, c.check); err != nil {
			return err
		}
		c.check++
		if c.until == c.check {
			return errSegmentEnd
		}
	}
	if c.w == nil {
		return nil
	}
	t := e.recordTime(pos)
	if !c.due.Due(t) {
		return nil
	}
	sum, ok, err := c.w.Capture(m, t, e.engineState())
	var skip *checkpoint.SkipError
	if errors.As(err, &skip) {
		c.skipped = append(c.skipped, fmt.Sprintf("record time %v: %s", t.Round(time.Millisecond), skip.Why))
		c.due.Taken(t) // the next when due: not at every stop until then
		return nil
	}
	if !ok {
		return err
	}
	c.taken = append(c.taken, sum)
	c.due.Taken(t)
	return nil
}

// quietAt reports whether the replay has no checkpoint to take or check
// at a guest exit at at (engine.QuietExit): a debugging session's set
// decides at every stop, so it never is.
func (c *checkpoints) quietAt(e *engine, at vmm.Position) bool {
	switch {
	case c == nil:
		return true
	case c.set != nil:
		return false
	case c.file != nil && c.check < len(c.known) && c.known[c.check].Pos.Exit <= at.Exit:
		return false
	case c.w != nil && c.due.Due(e.recordTime(at)):
		return false
	}
	return true
}

// inSet is a debugging session's replay at a stop where checkpoints are
// taken: the end, at until's place; a checkpoint of the session's own, if
// it keeps one here — RAM as recorded, without the debugger's int3s, and
// never while the debugger steps a thread (its trap flag is in the
// registers and frames a checkpoint keeps).
func (c *checkpoints) inSet(e *engine, pos vmm.Position, stop vmm.Stop) error {
	here := checkpoint.Summary{Events: e.applied, Pos: pos, Stop: stop}
	if u := c.untilAt; u != nil && checkpoint.Compare(*u, here) == 0 && u.Stop == stop {
		return errSegmentEnd
	}
	if c.keep == nil {
		return nil
	}
	here.Time = e.recordTime(pos)
	if e.kernel == nil || e.kernel.Stepping() || !c.set.canTake() {
		return nil
	}
	prev := c.set.latest(here)
	if prev != nil && checkpoint.Compare(*prev, here) == 0 || !c.keep(prev, here, c.set.lastCost(), time.Since(c.ran)) {
		return nil // one is here already: the replay started from it
	}
	err := c.set.take(e, here.Time)
	c.ran = time.Now()
	return err
}

// verify checks the replay against checkpoint i, which it has reached.
func (c *checkpoints) verify(e *engine, i int) error {
	want, err := c.file.Meta(i)
	if err != nil {
		return err
	}
	if err := e.m.Settle(); err != nil { // as capture did
		return err
	}
	got, err := e.recordedRAMHash()
	if err != nil {
		return err
	}
	digest := checkpoint.Digest(e.m.RegsDigest())
	if got != want.RAMHash || string(digest) != string(want.Digest) {
		ev, err := e.peek()
		if err != nil {
			return err
		}
		return e.diverge(ev, fmt.Sprintf("checkpoint %d", i), fmt.Sprintf("RAM %x…, registers %x", want.RAMHash[:6], want.Digest),
			fmt.Sprintf("RAM %x…, registers %x", got[:6], digest))
	}
	return nil
}

// checkRestoredRAM checks RAM just restored from cp (no probes placed yet)
// against what cp's capture hashed: its xxHash64, or in a checkpoint
// written before it kept one, its SHA-256.
func (e *engine) checkRestoredRAM(cp *checkpoint.Checkpoint) error {
	if cp.RAMSum != 0 {
		if got, err := e.m.RAMSum(); err != nil || got != cp.RAMSum {
			return errors.Join(err, errors.New("its RAM does not hash to its recorded xxHash64"))
		}
		return nil
	}
	if got, err := e.m.HashRAM(); err != nil || got != cp.RAMHash {
		return errors.Join(err, errors.New("its RAM does not hash to its recorded SHA-256"))
	}
	return nil
}

// recordedRAMHash hashes RAM as the recording had it here: without the
// probes' patches (taken out for the hash and put back), and with no
// branch-counter target, which each replay sets where its own next stop
// is (as the end's RAM hash is taken).
func (e *engine) recordedRAMHash() ([32]byte, error) {
	m := e.m
	if e.kernel != nil {
		var sum [32]byte
		return sum, e.kernel.WithoutBreakpoints(func() (err error) { sum, err = m.HashRAM(); return err })
	}
	if e.probes == nil {
		return m.HashRAM()
	}
	if err := e.probes.remove(m.RAM()); err != nil {
		return [32]byte{}, err
	}
	sum, err := m.HashRAM()
	if err != nil {
		return sum, err
	}
	return sum, e.probes.install(m)
}

// engineState is where the replay engine is: what a checkpoint keeps of
// it.
func (e *engine) engineState() checkpoint.EngineState {
	st := checkpoint.EngineState{Applied: e.applied, Last: e.last, Target: e.target, Clock: e.rtime}
	if e.trace != nil {
		st.TraceDrained, st.TraceLost = e.trace.drained, e.trace.lost
	}
	return st
}

// resume puts the machine and the engine in checkpoint i of c's file (or
// set): RAM, then the machine, then the engine, and the tape read up to
// where the checkpoint was taken. RAM and registers are checked against
// the checkpoint's own hashes, so a damaged one is never run — RAM once
// for a set's checkpoint, which the file's CRCs then keep.
func (e *engine) resume(c *checkpoints, i int) error {
	m := e.m
	f, at := c.file, i
	if c.set != nil {
		entry, held, err := c.set.entry(i)
		if err != nil {
			return err
		}
		f, at = held, entry.i
	}
	cp, disk, err := f.Load(at, m.RAM())
	if err != nil {
		return err
	}
	st := cp.Engine
	if err := checkStop(cp); err != nil {
		return fmt.Errorf("replayer: checkpoint %d: %w", i, err)
	}
	e.target = st.Target // what RAM holds: the hashes take it out
	if !c.set.isVerified(i) {
		if err := e.checkRestoredRAM(cp); err != nil {
			return fmt.Errorf("replayer: checkpoint %d: %w", i, err)
		}
		c.set.setVerified(i)
	}
	if st.Applied != cp.Events {
		return fmt.Errorf("replayer: checkpoint %d: engine state at event %d, checkpoint at %d", i, st.Applied, cp.Events)
	}
	if err := checkpoint.RestoreDisk(m, disk); err != nil {
		return fmt.Errorf("replayer: checkpoint %d: %w", i, err)
	}
	if err := m.Restore(cp.Machine); err != nil {
		return fmt.Errorf("replayer: checkpoint %d: %w", i, err)
	}
	if d := checkpoint.Digest(m.RegsDigest()); string(d) != string(cp.Digest) {
		return fmt.Errorf("replayer: checkpoint %d: restored registers do not match its digest", i)
	}
	if got := m.Position(); got != cp.Pos {
		return fmt.Errorf("replayer: checkpoint %d: at %s, its machine at %s", i, fmtPos(atPos(cp.Pos)), fmtPos(atPos(got)))
	}
	if err := e.skipTo(cp); err != nil {
		return fmt.Errorf("replayer: checkpoint %d: %w", i, err)
	}
	e.last, e.target = st.Last, st.Target
	if e.target < cp.Pos.Branch {
		// A recorder's checkpoint keeps the target word RAM holds, and
		// that may be one the guest already met, or 0 before any: no
		// stop is pending there, as none is at boot, where the word is
		// 0 too. Taken for a pending stop it would read as one the guest
		// went past (checkTarget). RAM keeps the word, as recorded.
		e.target = vmm.NoBranchTarget
	}
	e.rtime = st.Clock
	if e.trace != nil {
		e.trace.drained, e.trace.lost = st.TraceDrained, st.TraceLost
	}
	if s := e.sampler; s != nil && s.every != 0 {
		count, err := m.BranchCount()
		if err != nil {
			return err
		}
		s.next = s.resumeAt(count, cp.Stop)
	}
	return nil
}

// checkStop checks the kind of stop a checkpoint says it was taken at:
// one where checkpoints are taken (a replay waits for no other), the
// same in its summary and its machine.
func checkStop(cp *checkpoint.Checkpoint) error {
	if cp.Stop != vmm.StopGuestExit && cp.Stop != vmm.StopBranch || cp.Machine.LastStop != cp.Stop {
		return fmt.Errorf("taken at a stop of kind %d (its machine's: %d), where no checkpoint is taken", cp.Stop, cp.Machine.LastStop)
	}
	return nil
}

// skipTo reads the tape up to checkpoint cp, checking that the tape has
// the events the checkpoint says were applied — before its end event,
// the last of them where the checkpoint says, none after it before its
// position — so that a replay from it checks the rest of the tape, not
// nothing. A tape that ends before is no cut of this replay: the
// checkpoint is not of this tape.
func (e *engine) skipTo(cp *checkpoint.Checkpoint) error {
	st := &cp.Engine
	var last tape.Position
	for e.applied < st.Applied {
		ev, err := e.peek()
		if err != nil {
			return fmt.Errorf("at tape event %d, past the tape's %d events: %v", st.Applied, e.applied, err)
		}
		if ev.Kind == tape.KindEnd {
			return fmt.Errorf("at tape event %d, past the tape's end (event %d)", st.Applied, e.applied+1)
		}
		last = ev.Pos
		e.script.Next()
		e.applied++
	}
	at := atPos(cp.Pos)
	if st.Applied > 0 && last != st.Last {
		return fmt.Errorf("its last event was at %s, the tape's event %d is at %s", fmtPos(st.Last), st.Applied, fmtPos(last))
	}
	if before(at, last) {
		return fmt.Errorf("at %s, before its last event at %s", fmtPos(at), fmtPos(last))
	}
	if next, err := e.peek(); err == nil && before(next.Pos, at) {
		return fmt.Errorf("at %s, after the tape's next event at %s", fmtPos(at), fmtPos(next.Pos))
	}
	return nil
}

// before reports whether a comes before b.
func before(a, b tape.Position) bool {
	return a.Exit < b.Exit || a.Exit == b.Exit && a.Branch < b.Branch
}

// atPos is where p is, as a tape's position.
func atPos(p vmm.Position) tape.Position { return tape.Position{Exit: p.Exit, Branch: p.Branch} }
