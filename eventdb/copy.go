package eventdb

import (
	"fmt"
	"math"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// Copy adds the events of run, a complete run of src, after those added
// so far: each keeps its position and gets its arrival ordinal in src's
// run plus the events added before it, so the runs copied one after
// another hold their events in the order they arrived in each, run after
// run (a split replay's parts become one run so). Arrival order needs no
// merge of the run's streams: it reads src in key order with one iterator
// and copies each value as it is stored, checked but not rebuilt, but for
// the events of the kinds in rewrite, which it hands to fix before it
// stores them (their Args and Stack are fix's to change, until it
// returns).
func (in *Ingest) Copy(src *DB, run uint32, rewrite []Kind, fix func(*Event)) error {
	if err := in.usable(); err != nil {
		return err
	}
	r, err := src.Run(run)
	switch {
	case err != nil:
		return fmt.Errorf("eventdb: copy: %w", err)
	case !r.Complete:
		return fmt.Errorf("eventdb: copy: run %d is incomplete", run)
	case in.added+r.Events > math.MaxUint32+1:
		return fmt.Errorf("eventdb: run %d: copy run %d: a run holds at most 2^32 events", in.run.ID, run)
	}
	prefix := codec.RunEvents(run)
	it, err := src.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return fmt.Errorf("eventdb: copy run %d: %w", run, err)
	}
	defer it.Close()
	base, copied := in.added, uint64(0)
	var v codec.Value
	for ok := it.First(); ok; ok = it.Next() {
		key := it.Key()
		k, err := codec.DecodeEventKey(key)
		if err != nil {
			return corrupt(key, err)
		}
		val, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("eventdb: copy: read %s: %w", describeKey(key), err)
		}
		if err := codec.DecodeValue(&v, val); err != nil {
			return corrupt(key, err)
		}
		kind := Kind(k.Kind)
		switch {
		case !kind.Valid():
			return corrupt(key, fmt.Errorf("unknown kind %d", k.Kind))
		case uint64(k.Seq) >= r.Events:
			return corrupt(key, fmt.Errorf("seq %d past the run's %d events", k.Seq, r.Events))
		}
		if err := in.copyEvent(k, &v, val, base, rewrite, fix); err != nil {
			return err
		}
		copied++
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("eventdb: copy run %d: %w", run, err)
	}
	if copied != r.Events {
		return fmt.Errorf("eventdb: copy: run %d holds %d events, its record says %d", run, copied, r.Events)
	}
	return nil
}

// copyEvent stores an event of another run (its key k, its value val,
// decoded in v) as this run's base+k.Seq-th, handed to fix first if its
// kind is in rewrite.
func (in *Ingest) copyEvent(k codec.EventKey, v *codec.Value, val []byte, base uint64, rewrite []Kind, fix func(*Event)) error {
	if fix != nil && slices.Contains(rewrite, Kind(k.Kind)) {
		e := eventOf(k, v)
		fix(&e)
		*v = codec.Value{Time: int64(e.Time), Probe: e.Probe, Addr: e.Addr, Args: e.Args, Stack: e.Stack}
		in.val = codec.AppendValue(in.val[:0], v)
		val = in.val
	}
	k.Run, k.Seq = in.run.ID, uint32(base+uint64(k.Seq))
	in.key = k.Append(in.key[:0])
	return in.store(in.key, val)
}
