package eventdb

import (
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"
	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// Ingest adds one run's events. It buffers them and every
// Options.BatchEvents events commits them, in key order, as one Pebble
// batch together with the run record's updated event count. An Ingest
// belongs to one goroutine. After a failed commit it is unusable: every
// call returns that error.
type Ingest struct {
	db    *DB
	run   *Run // shared with NewRun's caller; Events and Complete follow commits
	every int  // events per batch
	wo    *pebble.WriteOptions

	buf     *sortBuf      // events not yet committed
	batch   *pebble.Batch // reused for every commit
	pending int           // events in buf
	added   uint64        // events added so far: the next event's seq
	done    bool          // Finish or Close ran
	err     error         // sticky commit error

	key []byte      // scratch
	val []byte      // scratch
	v   codec.Value // scratch
}

func newIngest(db *DB, run *Run) *Ingest {
	return &Ingest{
		db:    db,
		run:   run,
		every: db.opts.batchEvents(),
		wo:    db.opts.writeOptions(),
		buf:   newSortBuf(),
		// Keep the batch's buffer across commits: Pebble drops buffers
		// over 1 MiB on Reset by default, and growing a new one for every
		// ~5 MiB commit cost ~15% of the ingest.
		batch: db.pdb.NewBatch(pebble.WithMaxRetainedSizeBytes(1 << 30)),
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
	if !e.Kind.Valid() {
		return fmt.Errorf("eventdb: run %d: add event %d: unknown kind %d", in.run.ID, in.added, e.Kind)
	}
	if in.added > math.MaxUint32 {
		return fmt.Errorf("eventdb: run %d: add event: a run holds at most 2^32 events", in.run.ID)
	}
	k := codec.EventKey{
		Run:    in.run.ID,
		Kind:   uint8(e.Kind),
		Thread: e.Thread,
		Exit:   e.Pos.Exit,
		Branch: e.Pos.Branch,
		Seq:    uint32(in.added),
	}
	in.key = k.Append(in.key[:0])
	in.v = codec.Value{Time: int64(e.Time), Probe: e.Probe, Addr: e.Addr, Args: e.Args, Stack: e.Stack}
	in.val = codec.AppendValue(in.val[:0], &in.v)
	in.buf.add(in.key, in.val)
	in.added++
	in.pending++
	if in.pending >= in.every {
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

// commit commits the buffered events with the run record, marked
// complete if final.
func (in *Ingest) commit(final bool) error {
	rec := *in.run
	rec.Events = in.added
	rec.Complete = final
	if err := in.buf.write(in.batch); err != nil {
		in.err = fmt.Errorf("eventdb: run %d: commit: %w", rec.ID, err)
		return in.err
	}
	if err := in.batch.Set(codec.RunKey(rec.ID), appendRun(nil, &rec), nil); err != nil {
		in.err = fmt.Errorf("eventdb: run %d: commit: %w", rec.ID, err)
		return in.err
	}
	wo := in.wo
	if final {
		wo = pebble.Sync
	}
	if err := in.batch.Commit(wo); err != nil {
		in.err = fmt.Errorf("eventdb: run %d: commit %d events: %w", rec.ID, in.pending, err)
		return in.err
	}
	in.run.Events, in.run.Complete = rec.Events, rec.Complete
	in.batch.Reset()
	in.buf.reset()
	in.pending = 0
	return nil
}

// Finish commits the buffered events and marks the run Complete with its
// event count, in one batch, and syncs it. It then flushes Pebble's
// memtables, so that the finished run lives in compressed sstables rather
// than in the WAL, and the DB reopens without replaying it.
func (in *Ingest) Finish() error {
	if err := in.usable(); err != nil {
		return err
	}
	err := in.commit(true)
	in.release()
	if err != nil {
		return err
	}
	if err := in.db.pdb.Flush(); err != nil {
		return fmt.Errorf("eventdb: run %d: finish: flush: %w", in.run.ID, err)
	}
	return nil
}

// Close ends an ingest without finishing the run: the buffered events are
// committed and the run stays incomplete, as if the replay had stopped
// there. It does nothing after Finish or Close, so it can be deferred.
func (in *Ingest) Close() error {
	if in.done {
		return nil
	}
	if err := in.usable(); err != nil {
		in.release()
		return err
	}
	err := in.commit(false)
	in.release()
	return err
}

func (in *Ingest) release() {
	in.done = true
	if in.batch != nil && !in.db.closed.Load() {
		_ = in.batch.Close()
	}
	in.batch = nil
	in.buf = nil
}
