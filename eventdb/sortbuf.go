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
// into an sstable, which takes keys in key order only. Arrival order is
// nearly key order already: within one (kind, thread) stream positions and
// seqs increase. So each stream gets a buffer of its own, appended to as
// events arrive, and the commit writes the streams in key order, each
// read straight through: no per-event sort, and no jump to a random
// event's bytes for every key, which on a batch of tens of MiB cost a
// cache miss per event. A stream found out of order is sorted on its own.
type sortBuf struct {
	streams map[uint64]*stream // by id
	order   []*stream          // scratch for write: streams in key order
	n       int                // events buffered
}

// stream is one (kind, thread) stream of a batch.
type stream struct {
	id       uint64 // kind<<32 | thread: the stream's key order
	data     []byte // per event: key, value length u32 LE, value
	n        int    // events in data
	last     codec.Position
	unsorted bool // an event's position was below its predecessor's
}

// entLen is what data holds for an event besides its value.
const entLen = codec.EventKeyLen + 4

func newSortBuf() *sortBuf {
	return &sortBuf{streams: make(map[uint64]*stream)}
}

func (s *sortBuf) len() int { return s.n }

// add appends an event; key must be an event key (its stream is bytes
// 5–9). Whether the stream is still in order is decided here, from the
// position alone (seqs increase), which costs less than comparing keys.
func (s *sortBuf) add(key, value []byte) {
	id := uint64(key[5])<<32 | uint64(binary.BigEndian.Uint32(key[6:]))
	st := s.streams[id]
	if st == nil {
		st = &stream{id: id}
		s.streams[id] = st
	}
	pos := codec.KeyPosition(key)
	if st.n > 0 && pos.Less(st.last) {
		st.unsorted = true
	} else {
		st.last = pos
	}
	st.data = append(st.data, key...)
	st.data = binary.LittleEndian.AppendUint32(st.data, uint32(len(value)))
	st.data = append(st.data, value...)
	st.n++
	s.n++
}

// write sets every buffered event into w, in key order.
func (s *sortBuf) write(w *sstable.Writer) error {
	s.order = s.order[:0]
	for _, st := range s.streams {
		if st.n > 0 {
			s.order = append(s.order, st)
		}
	}
	slices.SortFunc(s.order, func(a, b *stream) int { return cmp.Compare(a.id, b.id) })
	for _, st := range s.order {
		if st.unsorted {
			st.sort()
		}
		for off := 0; off < len(st.data); off = st.next(off) {
			if err := w.Set(st.key(off), st.value(off)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (st *stream) key(off int) []byte { return st.data[off : off+codec.EventKeyLen] }

func (st *stream) value(off int) []byte {
	n := int(binary.LittleEndian.Uint32(st.data[off+codec.EventKeyLen:]))
	return st.data[off+entLen : off+entLen+n]
}

// next returns the offset of the event after the one at off.
func (st *stream) next(off int) int {
	return off + entLen + int(binary.LittleEndian.Uint32(st.data[off+codec.EventKeyLen:]))
}

// sort rewrites the stream's data in key order.
func (st *stream) sort() {
	offs := make([]int, 0, st.n)
	for off := 0; off < len(st.data); off = st.next(off) {
		offs = append(offs, off)
	}
	slices.SortFunc(offs, func(x, y int) int { return bytes.Compare(st.key(x), st.key(y)) })
	sorted := make([]byte, 0, len(st.data))
	for _, off := range offs {
		sorted = append(sorted, st.data[off:st.next(off)]...)
	}
	st.data, st.unsorted = sorted, false
}

// reset empties the buffer. It keeps a stream's memory for the next batch
// only if the stream used at least half of it in this one, and forgets
// streams that had no events: what it keeps stays within about twice the
// bytes of the batch, however threads come and go in a long run.
func (s *sortBuf) reset() {
	for id, st := range s.streams {
		switch {
		case st.n == 0:
			delete(s.streams, id)
			continue
		case cap(st.data) > 2*len(st.data):
			st.data = nil
		default:
			st.data = st.data[:0]
		}
		st.n, st.unsorted = 0, false
	}
	s.n = 0
}
