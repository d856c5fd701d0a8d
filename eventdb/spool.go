package eventdb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// A Spool keeps one run's events in a file, in the order they were added,
// encoded as a run stores them, for an Ingest to take later (CopySpool):
// a split replay's segments end out of order, and each keeps its events
// so until those before it are in the run, stored once rather than into a
// DB of its own and then again.
//
// The file is a sequence of records: the value's length (uvarint), the
// event's key (with run 0), its value.
type Spool struct {
	f    *os.File
	w    *bufio.Writer
	path string
	n    uint64 // events added
	err  error  // sticky write error

	key, val []byte
	v        codec.Value
}

// maxSpoolValue bounds a spooled value read back: a sample's stack is the
// largest part of any event, and is bounded far below this.
const maxSpoolValue = 1 << 20

// NewSpool creates a spool in a new file at path.
func NewSpool(path string) (*Spool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("eventdb: spool: %w", err)
	}
	return &Spool{f: f, w: bufio.NewWriterSize(f, 1<<16), path: path, key: make([]byte, 0, codec.EventKeyLen)}, nil
}

// Add appends e (e.Seq is ignored: events keep the order they are added
// in). e is not retained.
func (s *Spool) Add(e *Event) error {
	if s.err != nil {
		return s.err
	}
	if err := addable(e, s.n); err != nil {
		return fmt.Errorf("eventdb: spool %s: %w", s.path, err)
	}
	s.key, s.val = encodeEvent(e, 0, uint32(s.n), &s.v, s.key[:0], s.val[:0])
	var n [binary.MaxVarintLen64]byte
	_, s.err = s.w.Write(binary.AppendUvarint(n[:0], uint64(len(s.val))))
	if s.err == nil {
		_, s.err = s.w.Write(s.key)
	}
	if s.err == nil {
		_, s.err = s.w.Write(s.val)
	}
	if s.err != nil {
		s.err = fmt.Errorf("eventdb: spool %s: %w", s.path, s.err)
		return s.err
	}
	s.n++
	return nil
}

// Events is how many events the spool holds.
func (s *Spool) Events() uint64 { return s.n }

// Close closes the spool and removes its file.
func (s *Spool) Close() error {
	return errors.Join(s.f.Close(), os.Remove(s.path))
}

// CopySpool adds the spool's events after those added so far, in the
// order they were spooled, as Copy adds a run's: the events of the kinds
// in rewrite are handed to fix first.
func (in *Ingest) CopySpool(s *Spool, rewrite []Kind, fix func(*Event)) error {
	if err := in.usable(); err != nil {
		return err
	}
	if s.err != nil {
		return s.err
	}
	if in.added+s.n > math.MaxUint32+1 {
		return fmt.Errorf("eventdb: run %d: copy spool %s: a run holds at most 2^32 events", in.run.ID, s.path)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("eventdb: spool %s: %w", s.path, err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("eventdb: spool %s: %w", s.path, err)
	}
	bad := func(i uint64, err error) error {
		return fmt.Errorf("eventdb: spool %s: event %d of %d: %w", s.path, i, s.n, err)
	}
	r := bufio.NewReaderSize(s.f, 1<<16)
	base := in.added
	key := make([]byte, codec.EventKeyLen)
	var val []byte
	var v codec.Value
	for i := range s.n {
		size, err := binary.ReadUvarint(r)
		if err == nil && size > maxSpoolValue {
			err = fmt.Errorf("a value of %d bytes", size)
		}
		if err == nil {
			_, err = io.ReadFull(r, key)
		}
		if err == nil {
			val = slices.Grow(val[:0], int(size))[:size]
			_, err = io.ReadFull(r, val)
		}
		if err != nil {
			return bad(i, err)
		}
		k, err := codec.DecodeEventKey(key)
		if err == nil && (uint64(k.Seq) != i || !Kind(k.Kind).Valid()) {
			err = fmt.Errorf("seq %d, kind %d", k.Seq, k.Kind)
		}
		if err == nil {
			err = codec.DecodeValue(&v, val)
		}
		if err != nil {
			return bad(i, err)
		}
		if err := in.copyEvent(k, &v, val, base, rewrite, fix); err != nil {
			return err
		}
	}
	return nil
}
