package vfs

import "golang.org/x/sys/unix"

// A pipe's capacity: Linux's default, and what a pipe made while the
// program's pipes hold more than pipe-user-pages-soft (16 384 pages) gets
// instead (two pages).
const (
	PipeCapacity      = 64 << 10
	SmallPipeCapacity = 8 << 10
	pipeSoftBytes     = 64 << 20
)

// Pipe is a pipe's buffer and how many open files hold each end. A
// reader of an empty pipe and a writer of a full one wait on its queue
// and retry when it changes.
type Pipe struct {
	buf      []byte // what is written and not yet read
	capacity int    // charged to the budget while either end is open
	// store is the buffer's array, capacity long once the pipe is
	// written: buf lies in it, moved to its start when there is no room
	// after it, so a pipe never holds more than its capacity.
	store            []byte
	readers, writers int
	queue            Queue
	budget           *Budget
	ino              uint64 // what stat and /proc/self/fd call it, as pipefs numbers pipes
}

// NewPipe makes pipe number ino and its two ends, opened with flags'
// O_NONBLOCK.
// Each open pipe charges its capacity, as Linux accounts a user's pipe
// pages: past the soft limit a new pipe is small, past the hard one (the
// budget's) it fails with ENFILE.
func NewPipe(b *Budget, flags, ino uint64) (r, w *OpenFile, err error) {
	p := &Pipe{capacity: PipeCapacity, readers: 1, writers: 1, budget: b, ino: ino}
	if b[PipeBytes]+PipeCapacity > pipeSoftBytes {
		p.capacity = SmallPipeCapacity
	}
	if err := b.Charge(PipeBytes, int64(p.capacity)); err != nil {
		return nil, nil, err
	}
	nonblock := flags & unix.O_NONBLOCK
	return NewOpenFile(&PipeEnd{p: p}, "", unix.O_RDONLY|nonblock), NewOpenFile(&PipeEnd{p: p, writer: true}, "", unix.O_WRONLY|nonblock), nil
}

// ReopenPipe opens the pipe f is an end of again, as an open of
// /proc/self/fd/N does: a read end for O_RDONLY, a write end for
// O_WRONLY, with flags' O_NONBLOCK; ENXIO for O_RDWR, which this pipe
// cannot be both ends of in one file.
func ReopenPipe(f *OpenFile, flags uint64) (*OpenFile, error) {
	e, ok := f.impl.(*PipeEnd)
	acc := flags & unix.O_ACCMODE
	if !ok || acc == unix.O_RDWR {
		return nil, unix.ENXIO
	}
	end := &PipeEnd{p: e.p, writer: acc == unix.O_WRONLY}
	if end.writer {
		e.p.writers++
	} else {
		e.p.readers++
	}
	return NewOpenFile(end, "", acc|flags&unix.O_NONBLOCK), nil
}

// PipeEnd is an open end of a pipe.
type PipeEnd struct {
	notTTY
	p      *Pipe
	writer bool
}

// Read takes up to len(b) bytes; an empty pipe with writers blocks.
func (e *PipeEnd) Read(f *OpenFile, b []byte, _ int64) (int, error) {
	p := e.p
	if len(p.buf) == 0 {
		switch {
		case p.writers == 0:
			return 0, nil
		case f.nonblocking():
			return 0, unix.EAGAIN
		}
		return 0, ErrWouldBlock
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	p.queue.Notify(EventOut)
	return n, nil
}

// Write adds what fits; a full pipe with readers blocks, one without
// readers is ErrNoReaders.
func (e *PipeEnd) Write(f *OpenFile, b []byte, _ int64) (int, error) {
	p := e.p
	switch {
	case p.readers == 0:
		return 0, ErrNoReaders
	case len(p.buf) >= p.capacity && f.nonblocking():
		return 0, unix.EAGAIN
	case len(p.buf) >= p.capacity:
		return 0, ErrWouldBlock
	}
	n := min(len(b), p.capacity-len(p.buf))
	if p.store == nil { // first written, or restored from a checkpoint
		p.store = make([]byte, p.capacity)
		p.buf = p.store[:copy(p.store, p.buf)]
	}
	if start := cap(p.store) - cap(p.buf); start+len(p.buf)+n > p.capacity {
		p.buf = p.store[:copy(p.store, p.buf)]
	}
	p.buf = append(p.buf, b[:n]...)
	p.queue.Notify(EventIn)
	return n, nil
}

func (*PipeEnd) Seek(*OpenFile, int64, uint64) (uint64, error) { return 0, unix.ESPIPE }

// Readiness: the read end is readable with bytes in the pipe and hung up
// without writers; the write end writable with room, in error without
// readers.
func (e *PipeEnd) Readiness() Events {
	p := e.p
	var r Events
	if !e.writer {
		if len(p.buf) > 0 {
			r |= EventIn
		}
		if p.writers == 0 {
			r |= EventHup
		}
		return r
	}
	if len(p.buf) < p.capacity {
		r |= EventOut
	}
	if p.readers == 0 {
		r |= EventErr
	}
	return r
}

// Queue is the pipe's: both ends share it.
func (e *PipeEnd) Queue() *Queue { return &e.p.queue }

// Release closes the end: readers see end of file, writers EPIPE. The
// last end releases the pipe's capacity.
func (e *PipeEnd) Release() {
	p := e.p
	if e.writer {
		p.writers--
	} else {
		p.readers--
	}
	if p.readers == 0 && p.writers == 0 {
		p.budget.Release(PipeBytes, int64(p.capacity))
		p.buf, p.store = nil, nil
	}
	p.queue.Notify(AllEvents)
}

func (*PipeEnd) Node() *Node                    { return nil }
func (e *PipeEnd) save(sv *Saver, s *SavedFile) { s.Pipe = sv.pipe(e.p) }
