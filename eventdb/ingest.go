package eventdb

import (
	"errors"
	"fmt"
	"math"

	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// Ingest adds one run's events. It buffers them and every
// Options.BatchEvents events commits them: the batch, sorted into key
// order, and the run record with its updated event count become two
// sstables that Pebble ingests in one step. A commit runs on its own
// goroutine while Add fills the next batch (with Options.Sync, Add waits
// for it). An Ingest belongs to one goroutine. After a failed commit it
// is unusable: every call returns that error.
type Ingest struct {
	db    *DB
	run   *Run // shared with NewRun's caller; Events and Complete follow commits
	every int  // events per batch
	sync  bool // wait for each commit (Options.Sync)

	buf     *sortBuf // events not yet committed
	spare   *sortBuf // the other buffer; nil while a commit holds it
	flight  *flight  // the commit under way, nil if none
	batches int      // commits started: names their sstables
	added   uint64   // events added so far: the next event's seq
	done    bool     // Finish or Close ran
	err     error    // sticky commit error

	key []byte      // scratch
	val []byte      // scratch
	v   codec.Value // scratch
}

// flight is one batch on its way into Pebble.
type flight struct {
	buf  *sortBuf
	rec  Run        // the run record it stores
	done chan error // receives the commit's result
}

func newIngest(db *DB, run *Run) *Ingest {
	return &Ingest{
		db:    db,
		run:   run,
		every: db.opts.batchEvents(),
		sync:  db.opts.Sync,
		buf:   newSortBuf(),
		spare: newSortBuf(),
		key:   make([]byte, 0, codec.EventKeyLen),
	}
}

// Run returns the run being ingested.
func (in *Ingest) Run() *Run { return in.run }

// SetNote sets the run's note; it is stored with the next commit.
func (in *Ingest) SetNote(note string) { in.run.Note = note }

// Add buffers e, assigning it the next seq (e.Seq is ignored), and commits
// the batch when it holds BatchEvents events. e is not retained.
func (in *Ingest) Add(e *Event) error {
	if err := in.usable(); err != nil {
		return err
	}
	if err := addable(e, in.added); err != nil {
		return fmt.Errorf("eventdb: run %d: %w", in.run.ID, err)
	}
	in.key, in.val = encodeEvent(e, in.run.ID, uint32(in.added), &in.v, in.key[:0], in.val[:0])
	return in.store(in.key, in.val)
}

// addable checks an event about to be added as a run's seq-th.
func addable(e *Event, seq uint64) error {
	switch {
	case !e.Kind.Valid():
		return fmt.Errorf("add event %d: unknown kind %d", seq, e.Kind)
	case seq > math.MaxUint32:
		return errors.New("add event: a run holds at most 2^32 events")
	}
	return nil
}

// encodeEvent appends e's key, as run's seq-th event, to key and its value
// to val (v is scratch).
func encodeEvent(e *Event, run, seq uint32, v *codec.Value, key, val []byte) ([]byte, []byte) {
	k := codec.EventKey{Run: run, Kind: uint8(e.Kind), Thread: e.Thread, Exit: e.Pos.Exit, Branch: e.Pos.Branch, Seq: seq}
	*v = codec.Value{Time: int64(e.Time), Probe: e.Probe, Addr: e.Addr, Args: e.Args, Stack: e.Stack}
	return k.Append(key), codec.AppendValue(val, v)
}

// store buffers an encoded event, the next seq's, and commits the batch
// when it is full.
func (in *Ingest) store(key, val []byte) error {
	in.buf.add(key, val)
	in.added++
	if in.buf.len() >= in.every {
		return in.commit(false)
	}
	return nil
}

func (in *Ingest) usable() error {
	switch {
	case in.err != nil:
		return in.err
	case in.done:
		return fmt.Errorf("%w: run %d", ErrFinished, in.run.ID)
	case in.db.closed.Load():
		return ErrClosed
	}
	return nil
}

// commit starts committing the buffered events with the run record,
// marked complete if final, once the previous commit is done: one batch
// commits while the next one fills, so memory stays at two batches. A
// final commit, and every commit with Options.Sync, is waited for.
func (in *Ingest) commit(final bool) error {
	if err := in.wait(); err != nil {
		return err
	}
	c := &flight{buf: in.buf, rec: *in.run, done: make(chan error, 1)}
	c.rec.Events = in.added
	c.rec.Complete = final
	go func(batch int) { c.done <- in.db.ingestBatch(c.buf, &c.rec, batch) }(in.batches)
	in.batches++
	in.flight = c
	in.buf, in.spare = in.spare, nil
	if in.sync || final {
		return in.wait()
	}
	return nil
}

// wait waits for the commit under way, if any, and takes back its buffer.
// Only a commit that is done updates the caller's Run.
func (in *Ingest) wait() error {
	c := in.flight
	if c == nil {
		return nil
	}
	in.flight = nil
	if err := <-c.done; err != nil {
		in.err = fmt.Errorf("eventdb: run %d: commit %d events: %w", c.rec.ID, c.buf.len(), err)
		return in.err
	}
	in.run.Events, in.run.Complete = c.rec.Events, c.rec.Complete
	c.buf.reset()
	in.spare = c.buf
	return nil
}

// Finish commits the buffered events and marks the run Complete with its
// event count, in one step, and waits until that is on disk. The run's
// events never pass through Pebble's WAL or memtables: they are in
// sstables already.
func (in *Ingest) Finish() error {
	if err := in.usable(); err != nil {
		return err
	}
	err := in.commit(true)
	in.release()
	return err
}

// Close ends an ingest without finishing the run: the buffered events are
// committed and the run stays incomplete, as if the replay had stopped
// there. It does nothing after Finish or Close, so it can be deferred.
func (in *Ingest) Close() error {
	if in.done {
		return nil
	}
	err := in.usable()
	if err == nil {
		err = in.commit(false)
	}
	if werr := in.wait(); err == nil {
		err = werr
	}
	in.release()
	return err
}

func (in *Ingest) release() {
	in.done = true
	in.buf, in.spare = nil, nil
}
