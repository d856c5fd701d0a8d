package tape

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ChunkBytes is the pending payload size at which Append writes a chunk by
// itself. Events not yet written are what a killed recorder loses: call
// Flush more often (on a timer, say) to lose less.
const ChunkBytes = 64 << 10

// Writer appends events to a tape, buffering them into chunks. Each chunk
// reaches the underlying writer in one Write call, so a recorder killed at
// any moment leaves whole chunks followed at most by a partial one that
// the reader reports as truncation.
//
// A Writer is not safe for concurrent use. After a write error every call
// returns that error: the tape ends at its last whole chunk.
type Writer struct {
	w    io.Writer
	f    *os.File // closed by Close if Create opened it
	buf  []byte   // frameSize bytes of room for the frame header, then the pending payload
	n    uint32   // events in buf
	host []byte   // a host frame being written, reused
	d    deltas

	events uint64
	bytes  int64
	ended  bool // an End event was appended
	closed bool
	err    error // sticky write error
}

var errClosed = errors.New("tape: writer closed")

// Create creates the file at path, which must not exist (a tape is never
// overwritten by accident: it holds a run that cannot be made again), and
// writes the header to it at once. An invalid header is reported before
// the file is touched.
func Create(path string, h *Header) (*Writer, error) {
	head, err := encodeHeader(h)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tape: %w", err)
	}
	w, err := newWriter(f, head)
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	w.f = f
	return w, nil
}

// NewWriter writes the header to w and returns a Writer appending to it.
func NewWriter(w io.Writer, h *Header) (*Writer, error) {
	head, err := encodeHeader(h)
	if err != nil {
		return nil, err
	}
	return newWriter(w, head)
}

func newWriter(w io.Writer, head [][]byte) (*Writer, error) {
	tw := &Writer{w: w, buf: make([]byte, frameSize, frameSize+ChunkBytes+4<<10)}
	for _, b := range head {
		if err := tw.write(b); err != nil {
			return nil, err
		}
	}
	return tw, nil
}

// Append validates e and adds it to the pending chunk, writing the chunk
// when it reaches ChunkBytes. Append does not keep e.
func (w *Writer) Append(e *Event) error {
	switch {
	case w.closed:
		return errClosed
	case w.err != nil:
		return w.err
	case e == nil:
		return errors.New("tape: append: nil event")
	case w.ended:
		return fmt.Errorf("tape: append %v event %d: the tape already has its end event", e.Kind, w.events)
	}
	if why := e.check(); why != "" {
		return fmt.Errorf("tape: append event %d: %s", w.events, why)
	}
	w.buf = appendEvent(w.buf, e, &w.d)
	w.n++
	w.events++
	w.ended = e.Kind == KindEnd
	if len(w.buf)-frameSize >= ChunkBytes {
		return w.Flush()
	}
	return nil
}

// Flush writes the pending chunk, if any, with one Write call.
func (w *Writer) Flush() error {
	if w.err != nil || w.n == 0 {
		return w.err
	}
	putFrame(w.buf[:frameSize], tagChunk, w.n, w.buf[frameSize:])
	err := w.write(w.buf)
	w.buf, w.n, w.d = w.buf[:frameSize], 0, deltas{}
	return err
}

// AppendHost writes a host frame at once, with one Write call: count
// records of the recording host's own trace, in an encoding this package
// does not interpret (package hostview's). Host frames sit between chunks
// and may follow the end event: the host is still being traced while the
// guest's last events are written.
func (w *Writer) AppendHost(count uint32, body []byte) error {
	switch {
	case w.closed:
		return errClosed
	case w.err != nil:
		return w.err
	case count == 0 || len(body) == 0 || len(body) > maxPayloadBytes:
		return fmt.Errorf("tape: host frame of %d records in %d bytes (want 1 to %d bytes, at least one record)", count, len(body), maxPayloadBytes)
	}
	w.host = appendFrame(w.host[:0], tagHost, count, body)
	return w.write(w.host)
}

func (w *Writer) write(b []byte) error {
	n, err := w.w.Write(b)
	w.bytes += int64(n)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("tape: write at byte %d: %w", w.bytes, err)
	}
	return w.err
}

// Close flushes the pending chunk and, if Create opened the file, syncs
// and closes it.
func (w *Writer) Close() error {
	if w.closed {
		return errClosed
	}
	err := w.Flush()
	w.closed = true
	if w.f != nil {
		if err == nil {
			if serr := w.f.Sync(); serr != nil {
				err = fmt.Errorf("tape: %w", serr)
			}
		}
		if cerr := w.f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("tape: %w", cerr)
		}
	}
	return err
}

// Events returns the number of events appended, flushed or not.
func (w *Writer) Events() uint64 { return w.events }

// Bytes returns the number of bytes written to the file: the header and
// the chunks flushed so far, not the pending one.
func (w *Writer) Bytes() int64 { return w.bytes }
