package vfs

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// eventMax is the largest value an eventfd's counter holds: a write that
// would pass it waits, and 2^64-1 itself is never written (eventfd(2)).
const eventMax = 1<<64 - 2

// EventFD is an eventfd's counter: a write adds to it, a read takes it
// all (or one, in semaphore mode). A read of zero and a write past
// eventMax wait on its queue.
type EventFD struct {
	notTTY
	count     uint64
	semaphore bool
	queue     Queue
}

// NewEventFD opens an eventfd with initial count and eventfd2's flags
// (EFD_SEMAPHORE, EFD_NONBLOCK; EFD_CLOEXEC is the descriptor's).
func NewEventFD(count uint64, flags uint64) *OpenFile {
	e := &EventFD{count: count, semaphore: flags&unix.EFD_SEMAPHORE != 0}
	return NewOpenFile(e, "anon_inode:[eventfd]", unix.O_RDWR|flags&unix.O_NONBLOCK)
}

// Read takes the counter (or 1 of it) as 8 bytes; fewer is EINVAL.
func (e *EventFD) Read(f *OpenFile, b []byte, _ int64) (int, error) {
	switch {
	case len(b) < 8:
		return 0, unix.EINVAL
	case e.count == 0 && f.nonblocking():
		return 0, unix.EAGAIN
	case e.count == 0:
		return 0, ErrWouldBlock
	}
	v := e.count
	if e.semaphore {
		v = 1
	}
	e.count -= v
	binary.LittleEndian.PutUint64(b, v)
	e.queue.Notify(EventOut)
	return 8, nil
}

// Write adds an 8-byte value; fewer bytes, or 2^64-1, is EINVAL.
func (e *EventFD) Write(f *OpenFile, b []byte, _ int64) (int, error) {
	if len(b) < 8 {
		return 0, unix.EINVAL
	}
	v := binary.LittleEndian.Uint64(b)
	switch {
	case v == 1<<64-1:
		return 0, unix.EINVAL
	case v > eventMax-e.count && f.nonblocking():
		return 0, unix.EAGAIN
	case v > eventMax-e.count:
		return 0, ErrWouldBlock
	}
	e.count += v
	if v > 0 {
		e.queue.Notify(EventIn)
	}
	return 8, nil
}

func (*EventFD) Seek(*OpenFile, int64, uint64) (uint64, error) { return 0, unix.ESPIPE }

// Readiness: readable with a count, writable while 1 more fits.
func (e *EventFD) Readiness() Events {
	var r Events
	if e.count > 0 {
		r |= EventIn
	}
	if e.count < eventMax {
		r |= EventOut
	}
	return r
}

func (e *EventFD) Queue() *Queue { return &e.queue }
func (*EventFD) Release()        {}
func (*EventFD) Node() *Node     { return nil }
