package vfs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// File is what one kind of open file does: a regular file, a directory,
// a device, the console, a pipe's end. The description it is opened in
// (OpenFile) holds what every kind shares: access mode, flags, offset.
type File interface {
	// Read reads at off (a kind without positions ignores it); a kind
	// that would block returns ErrWouldBlock.
	Read(f *OpenFile, b []byte, off int64) (int, error)
	// Write writes at off; ErrWouldBlock as Read, ErrNoReaders for a
	// pipe no one reads (the caller raises SIGPIPE).
	Write(f *OpenFile, b []byte, off int64) (int, error)
	// Seek moves f's position (lseek's whence, checked for range).
	Seek(f *OpenFile, off int64, whence uint64) (uint64, error)
	Ioctl(cmd, arg uint64) (uint64, error)
	// Readiness is what the file is ready for, before its access mode
	// and the events asked for are applied.
	Readiness() Events
	// Queue is the queue a change of its readiness notifies; nil for a
	// kind whose readiness never changes.
	Queue() *Queue
	// Release is told that the last descriptor of the file closed.
	Release()
	// Node is the node the file is of, or nil (the console, a pipe).
	Node() *Node
	// save puts the kind's part of the file in s.
	save(sv *Saver, s *SavedFile)
}

// ErrWouldBlock is a read or write that must wait for the file to
// change: the caller waits on its Queue and issues the call again.
var ErrWouldBlock = errors.New("vfs: would block")

// ErrNoReaders is a write to a pipe whose read end is closed: EPIPE, after
// the caller raises SIGPIPE.
var ErrNoReaders = errors.New("vfs: pipe has no readers")

// OpenFile is an open file description: a kind of file with its offset
// and flags, shared by the descriptors that refer to it.
type OpenFile struct {
	impl   File
	Path   string // where a node was opened
	Refs   int    // descriptors that refer to it, in every process
	Flags  uint64 // O_ACCMODE, O_APPEND, O_NONBLOCK
	Off    int64
	DirPos int // the next directory entry getdents returns
	// Owner is F_SETOWN's process (a group if negative), kept for
	// F_GETOWN.
	Owner int
	// watchers are the epoll items that watch it, removed when it is
	// released, as Linux removes them when the file's last reference goes.
	watchers []*epollItem
}

// NewOpenFile opens impl with flags, referred to by no descriptor yet.
func NewOpenFile(impl File, path string, flags uint64) *OpenFile {
	return &OpenFile{impl: impl, Path: path, Flags: flags}
}

func (f *OpenFile) Readable() bool    { return f.Flags&unix.O_ACCMODE != unix.O_WRONLY }
func (f *OpenFile) Writable() bool    { return f.Flags&unix.O_ACCMODE != unix.O_RDONLY }
func (f *OpenFile) nonblocking() bool { return f.Flags&unix.O_NONBLOCK != 0 }

// Seekable reports whether f has a position (Linux's FMODE_LSEEK and
// FMODE_PREAD): a file, directory or device has; a pipe or the console
// has not.
func (f *OpenFile) Seekable() bool { return f.impl.Node() != nil }

// Node is the node f is of, or nil.
func (f *OpenFile) Node() *Node { return f.impl.Node() }

// IsPipe reports whether f is a pipe's end.
func (f *OpenFile) IsPipe() bool {
	_, ok := f.impl.(*PipeEnd)
	return ok
}

// IsStream reports whether f is a pipe or the console: what stat calls a
// FIFO.
func (f *OpenFile) IsStream() bool { return f.impl.Node() == nil }

// StreamIno is the inode number stat gives a pipe's end or the standard
// streams (1: the pipe they are on the host, as far as the program
// knows).
func (f *OpenFile) StreamIno() uint64 {
	if e, ok := f.impl.(*PipeEnd); ok {
		return e.p.ino
	}
	return 1
}

// AnonName is the name Linux gives the anonymous inode of an epoll
// instance, an eventfd, a timerfd or a signalfd (/proc/self/fd's link
// reads "anon_inode:[NAME]"); "" for other kinds.
func (f *OpenFile) AnonName() string {
	switch f.impl.(type) {
	case *Epoll:
		return "eventpoll"
	case *EventFD:
		return "eventfd"
	case *TimerFD:
		return "timerfd"
	case *SignalFD:
		return "signalfd"
	}
	return ""
}

// Queue is the queue a change of f notifies, or nil.
func (f *OpenFile) Queue() *Queue { return f.impl.Queue() }

// Read reads up to len(b) bytes at off.
func (f *OpenFile) Read(b []byte, off int64) (int, error) {
	if !f.Readable() {
		return 0, unix.EBADF
	}
	return f.impl.Read(f, b, off)
}

// Write writes b at off.
func (f *OpenFile) Write(b []byte, off int64) (int, error) {
	if !f.Writable() {
		return 0, unix.EBADF
	}
	return f.impl.Write(f, b, off)
}

// Lseek is lseek: a whence past SEEK_HOLE is EINVAL, a file without a
// position ESPIPE.
func (f *OpenFile) Lseek(off int64, whence uint64) (uint64, error) {
	switch {
	case whence > unix.SEEK_HOLE: // SEEK_MAX
		return 0, unix.EINVAL
	case !f.Seekable():
		return 0, unix.ESPIPE
	}
	return f.impl.Seek(f, off, whence)
}

// Unread is what FIONREAD answers: the bytes a read would return without
// waiting, for a pipe's read end, and for a regular file its size less
// the offset (negative past the end, as Linux answers); false for the
// kinds Linux answers ENOTTY.
func (f *OpenFile) Unread() (int64, bool) {
	switch impl := f.impl.(type) {
	case *PipeEnd:
		if !impl.writer {
			return int64(len(impl.p.buf)), true
		}
	case *regular:
		return impl.n.Size() - f.Off, true
	case *Socket:
		if impl.listening {
			return 0, false
		}
		if !impl.Stream() { // a message socket's next message
			if len(impl.msgs) == 0 {
				return 0, true
			}
			return int64(impl.msgs[0]), true
		}
		return int64(len(impl.buf)), true
	}
	return 0, false
}

// Ioctl is the file's answer to an ioctl.
func (f *OpenFile) Ioctl(cmd, arg uint64) (uint64, error) { return f.impl.Ioctl(cmd, arg) }

// Readiness is what f is ready for, of events (POLLIN, POLLOUT), with
// POLLHUP and POLLERR as Linux reports them.
func (f *OpenFile) Readiness(events Events) Events {
	r := f.impl.Readiness()
	if !f.Readable() {
		r &^= EventIn
	}
	if !f.Writable() {
		r &^= EventOut
	}
	return r & (events | EventHup | EventErr)
}

// notTTY is the ioctl of every kind here: no file is a terminal.
type notTTY struct{}

func (notTTY) Ioctl(cmd, arg uint64) (uint64, error) { return 0, unix.ENOTTY }

// steady is the readiness of a kind that never makes a reader or writer
// wait, and so has no queue.
type steady struct{}

func (steady) Readiness() Events { return EventIn | EventOut }
func (steady) Queue() *Queue     { return nil }
