package eventdb

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// sortBuf holds one batch's encoded events until commit, then writes them
// into an sstable, which takes keys in key order only. Sorting is cheap
// because arrival order is nearly key order already: within one (kind,
// thread) stream positions and seqs increase, so a stable counting sort on
// the stream does it, and a stream found out of order is sorted on its own.
type sortBuf struct {
	data    []byte           // key then value of each event, back to back
	ents    []bufEnt         // one per event, in arrival order
	streams map[uint64]int32 // (kind<<32 | thread) → index in strs
	strs    []stream         // in first-seen order

	// scratch, reused by write
	rank  []int32 // stream index → position in key order
	start []int32 // per ranked stream: first slot in order
	order []int32 // indexes into ents, in key order
}

// stream is one (kind, thread) stream of a batch. Whether its events
// arrived in key order is decided as they arrive, from the position alone
// (their seqs increase), which costs less than comparing keys at write.
type stream struct {
	id       uint64 // kind<<32 | thread: the stream's key order
	last     codec.Position
	unsorted bool // an event's position was below its predecessor's
}

type bufEnt struct {
	off    uint32 // of the key in data; the value follows it
	vlen   uint32
	stream int32
}

func newSortBuf() *sortBuf {
	return &sortBuf{streams: make(map[uint64]int32)}
}

func (s *sortBuf) len() int { return len(s.ents) }

// add appends an event; key must be an event key (its stream is bytes 5–9).
func (s *sortBuf) add(key, value []byte) {
	id := uint64(key[5])<<32 | uint64(binary.BigEndian.Uint32(key[6:]))
	pos := codec.KeyPosition(key)
	st, ok := s.streams[id]
	if !ok {
		st = int32(len(s.strs))
		s.streams[id] = st
		s.strs = append(s.strs, stream{id: id, last: pos})
	}
	if str := &s.strs[st]; pos.Less(str.last) {
		str.unsorted = true
	} else {
		str.last = pos
	}
	s.ents = append(s.ents, bufEnt{off: uint32(len(s.data)), vlen: uint32(len(value)), stream: st})
	s.data = append(s.data, key...)
	s.data = append(s.data, value...)
}

func (s *sortBuf) key(e bufEnt) []byte { return s.data[e.off : e.off+codec.EventKeyLen] }

func (s *sortBuf) value(e bufEnt) []byte {
	v := e.off + codec.EventKeyLen
	return s.data[v : v+e.vlen]
}

// write sets every buffered event into w, in key order.
func (s *sortBuf) write(w *sstable.Writer) error {
	n := len(s.strs)
	// Rank the streams by id, which is their key order.
	byID := make([]int32, n)
	for i := range byID {
		byID[i] = int32(i)
	}
	slices.SortFunc(byID, func(x, y int32) int { return cmp.Compare(s.strs[x].id, s.strs[y].id) })
	s.rank = resize(s.rank, n)
	for r, st := range byID {
		s.rank[st] = int32(r)
	}
	// Counting sort, stable: each stream keeps arrival order.
	s.start = resize(s.start, n+1)
	clear(s.start)
	for _, e := range s.ents {
		s.start[s.rank[e.stream]+1]++
	}
	for r := 1; r <= n; r++ {
		s.start[r] += s.start[r-1]
	}
	s.order = resize(s.order, len(s.ents))
	next := slices.Clone(s.start[:n])
	for i, e := range s.ents {
		r := s.rank[e.stream]
		s.order[next[r]] = int32(i)
		next[r]++
	}
	// A stream whose positions went backwards gets a real sort.
	for r, st := range byID {
		if s.strs[st].unsorted {
			slices.SortFunc(s.order[s.start[r]:s.start[r+1]], func(x, y int32) int {
				return bytes.Compare(s.key(s.ents[x]), s.key(s.ents[y]))
			})
		}
	}
	for _, i := range s.order {
		e := s.ents[i]
		if err := w.Set(s.key(e), s.value(e)); err != nil {
			return err
		}
	}
	return nil
}

// reset empties the buffer, keeping its memory.
func (s *sortBuf) reset() {
	s.data = s.data[:0]
	s.ents = s.ents[:0]
	s.strs = s.strs[:0]
	clear(s.streams)
}

func resize(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}
