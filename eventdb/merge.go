package eventdb

import (
	"container/heap"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"
	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// Threads lists the threads that have events of kind k in run, in order.
// It seeks from one thread's range to the next, so it costs one seek per
// thread, not one step per event.
func (db *DB) Threads(run uint32, k Kind) ([]uint32, error) {
	prefix := codec.KindEvents(run, uint8(k))
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return nil, fmt.Errorf("eventdb: threads of run %d: %w", run, err)
	}
	defer it.Close()
	var threads []uint32
	for ok := it.First(); ok; {
		key, err := codec.DecodeEventKey(it.Key())
		if err != nil {
			return nil, corrupt(it.Key(), err)
		}
		threads = append(threads, key.Thread)
		if key.Thread == math.MaxUint32 {
			break
		}
		ok = it.SeekGE(codec.ThreadEvents(run, uint8(k), key.Thread+1))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("eventdb: threads of run %d: %w", run, err)
	}
	return threads, nil
}

// Merged walks the events q selects in arrival order (Seq) rather than key
// order: one iterator per kind and thread, merged on a heap, so memory
// stays proportional to the number of threads. Tools that replay a run's
// history across threads (a lock's owner, who waited on whom) read it so.
// q.Thread, if set, limits the merge to that thread.
func (db *DB) Merged(q Query) *MergedIter {
	m := &MergedIter{}
	if _, err := db.Run(q.Run); err != nil {
		m.err = fmt.Errorf("eventdb: query: %w", err)
		return m
	}
	kinds := q.Kinds
	if len(kinds) == 0 {
		kinds = Kinds()
	}
	for _, k := range kinds {
		threads := []uint32{}
		if q.Thread != nil {
			threads = append(threads, *q.Thread)
		} else {
			var err error
			if threads, err = db.Threads(q.Run, k); err != nil {
				m.err = err
				return m
			}
		}
		for _, t := range threads {
			sub := q
			sub.Kinds, sub.Thread = []Kind{k}, &t
			it := db.Query(sub)
			m.all = append(m.all, it)
			if it.Next() {
				m.h = append(m.h, it)
			} else if err := it.Err(); err != nil {
				m.err = err
				return m
			}
		}
	}
	heap.Init(&m.h)
	return m
}

// MergedIter is an iterator over events in arrival order; use it as Iter.
type MergedIter struct {
	all []*Iter
	h   iterHeap
	cur *Iter // the iterator whose event was returned last
	err error
}

// Next moves to the next event in arrival order.
func (m *MergedIter) Next() bool {
	if m.err != nil {
		return false
	}
	if m.cur != nil {
		if m.cur.Next() {
			heap.Fix(&m.h, 0)
		} else {
			if m.err = m.cur.Err(); m.err != nil {
				return false
			}
			heap.Pop(&m.h)
		}
		m.cur = nil
	}
	if len(m.h) == 0 {
		return false
	}
	m.cur = m.h[0]
	return true
}

// Event returns the current event, valid until the next call to Next.
func (m *MergedIter) Event() *Event { return m.cur.Event() }

// Err returns the error that ended the iteration, if any.
func (m *MergedIter) Err() error { return m.err }

// Close releases the iterators and returns the first error.
func (m *MergedIter) Close() error {
	for _, it := range m.all {
		if err := it.Close(); err != nil && m.err == nil {
			m.err = err
		}
	}
	m.all, m.h, m.cur = nil, nil, nil
	return m.err
}

// iterHeap orders iterators by the Seq of their current event.
type iterHeap []*Iter

func (h iterHeap) Len() int           { return len(h) }
func (h iterHeap) Less(i, j int) bool { return h[i].ev.Seq < h[j].ev.Seq }
func (h iterHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *iterHeap) Push(x any)        { *h = append(*h, x.(*Iter)) }
func (h *iterHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
