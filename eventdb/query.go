package eventdb

import (
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// Query selects events of one run. Run is required; the other fields'
// zero values select everything.
//
// Run, Kinds and Thread choose the key ranges scanned (see the package
// comment); From/To, Addr and Probe filter the events of those ranges as
// they are read.
type Query struct {
	Run    uint32
	Kinds  []Kind        // none: every kind (with Thread: every kind this package knows)
	Thread *uint32       // nil: every thread
	From   time.Duration // events with From <= Time (From == 0: no lower limit) ...
	To     time.Duration // ... and Time < To (To == 0: no upper limit)
	Addr   *uint64       // nil: any address
	Probe  *uint32       // nil: any probe id
}

// Iter walks the events a Query selects, in key order: by kind, then
// thread, then position and seq. Use it as
//
//	for it.Next() { e := it.Event() … }
//	if err := it.Close(); err != nil { … }
//
// An error (including a corrupt event, a *CorruptError naming its key)
// ends the iteration; Err and Close report it after the loop.
type Iter struct {
	q      Query
	ranges [][2][]byte // [lower, upper) key ranges still to scan
	it     *pebble.Iterator
	inside bool // it is positioned in ranges[0]
	err    error

	ev Event
	v  codec.Value
}

// Query returns an iterator over the events q selects. A run that does
// not exist is an error (wrapping ErrNoRun) from Err.
func (db *DB) Query(q Query) *Iter {
	it := &Iter{q: q}
	if _, err := db.Run(q.Run); err != nil {
		it.err = fmt.Errorf("eventdb: query: %w", err)
		return it
	}
	kinds := slices.Clone(q.Kinds)
	slices.Sort(kinds)
	kinds = slices.Compact(kinds)
	if len(kinds) == 0 && q.Thread != nil {
		kinds = Kinds()
	}
	if len(kinds) == 0 {
		prefix := codec.RunEvents(q.Run)
		it.ranges = append(it.ranges, [2][]byte{prefix, codec.PrefixEnd(prefix)})
	}
	for _, k := range kinds {
		var prefix []byte
		if q.Thread != nil {
			prefix = codec.ThreadEvents(q.Run, uint8(k), *q.Thread)
		} else {
			prefix = codec.KindEvents(q.Run, uint8(k))
		}
		it.ranges = append(it.ranges, [2][]byte{prefix, codec.PrefixEnd(prefix)})
	}
	pit, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: it.ranges[0][0], UpperBound: it.ranges[0][1]})
	if err != nil {
		it.err = fmt.Errorf("eventdb: query run %d: %w", q.Run, err)
		return it
	}
	it.it = pit
	return it
}

// Next moves to the next selected event, returning false at the end or on
// an error.
func (it *Iter) Next() bool {
	if it.err != nil || it.it == nil {
		return false
	}
	for {
		var ok bool
		if it.inside {
			ok = it.it.Next()
		} else {
			if len(it.ranges) == 0 {
				return false
			}
			it.it.SetBounds(it.ranges[0][0], it.ranges[0][1])
			ok = it.it.First()
			it.inside = true
		}
		if !ok {
			if err := it.it.Error(); err != nil {
				it.err = fmt.Errorf("eventdb: query run %d: %w", it.q.Run, err)
				return false
			}
			it.ranges = it.ranges[1:]
			it.inside = false
			continue
		}
		if it.load() && it.match() {
			return true
		}
		if it.err != nil {
			return false
		}
	}
}

// load decodes the current entry into it.ev.
func (it *Iter) load() bool {
	key := it.it.Key()
	k, err := codec.DecodeEventKey(key)
	if err != nil {
		it.err = corrupt(key, err)
		return false
	}
	val, err := it.it.ValueAndErr()
	if err != nil {
		it.err = fmt.Errorf("eventdb: query run %d: read %s: %w", it.q.Run, describeKey(key), err)
		return false
	}
	if err := codec.DecodeValue(&it.v, val); err != nil {
		it.err = corrupt(key, err)
		return false
	}
	it.ev = eventOf(k, &it.v)
	return true
}

// eventOf is the event a decoded key and value hold; its Args and Stack
// are v's (nil when empty).
func eventOf(k codec.EventKey, v *codec.Value) Event {
	e := Event{
		Kind:   Kind(k.Kind),
		Thread: k.Thread,
		Pos:    Position{Exit: k.Exit, Branch: k.Branch},
		Seq:    k.Seq,
		Time:   time.Duration(v.Time),
		Probe:  v.Probe,
		Addr:   v.Addr,
	}
	if len(v.Args) > 0 {
		e.Args = v.Args
	}
	if len(v.Stack) > 0 {
		e.Stack = v.Stack
	}
	return e
}

func (it *Iter) match() bool {
	q, e := &it.q, &it.ev
	switch {
	case q.From != 0 && e.Time < q.From:
		return false
	case q.To != 0 && e.Time >= q.To:
		return false
	case q.Addr != nil && e.Addr != *q.Addr:
		return false
	case q.Probe != nil && e.Probe != *q.Probe:
		return false
	}
	return true
}

// Event returns the current event. It and its slices are valid until the
// next call to Next; Clone it to keep it.
func (it *Iter) Event() *Event { return &it.ev }

// Err returns the error that ended the iteration, if any.
func (it *Iter) Err() error { return it.err }

// Close releases the iterator and returns Err, or the error closing it.
func (it *Iter) Close() error {
	if it.it != nil {
		if err := it.it.Close(); err != nil && it.err == nil {
			it.err = fmt.Errorf("eventdb: query run %d: %w", it.q.Run, err)
		}
		it.it = nil
	}
	return it.err
}
