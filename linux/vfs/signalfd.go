package vfs

import "golang.org/x/sys/unix"

// SignalSource is what a signalfd reads: the signals pending for the
// thread reading or polling it, which only the kernel knows.
type SignalSource interface {
	// TakeSignal dequeues the lowest pending signal in mask and returns
	// its struct signalfd_siginfo.
	TakeSignal(mask uint64) ([128]byte, bool)
	// SignalPending reports whether a signal in mask is pending.
	SignalPending(mask uint64) bool
}

// SignalFD is a signalfd: reads take the pending signals in its mask, as
// struct signalfd_siginfo; it is readable while one is pending. The
// kernel notifies its queue when a signal becomes pending.
type SignalFD struct {
	notTTY
	Mask     uint64
	source   SignalSource
	released bool
	queue    Queue
}

// signalfdInfoSize is struct signalfd_siginfo.
const signalfdInfoSize = 128

// NewSignalFD opens a signalfd for the signals in mask (signalfd4's
// SFD_NONBLOCK; SFD_CLOEXEC is the descriptor's).
func NewSignalFD(src SignalSource, mask, flags uint64) (*OpenFile, *SignalFD) {
	sf := &SignalFD{Mask: mask, source: src}
	return NewOpenFile(sf, "anon_inode:[signalfd]", unix.O_RDWR|flags&unix.O_NONBLOCK), sf
}

// SignalFDOf is f's signalfd, or nil.
func SignalFDOf(f *OpenFile) *SignalFD {
	sf, _ := f.impl.(*SignalFD)
	return sf
}

// Read takes as many pending signals as fit, at least one, or waits.
func (sf *SignalFD) Read(f *OpenFile, b []byte, _ int64) (int, error) {
	if len(b) < signalfdInfoSize {
		return 0, unix.EINVAL
	}
	n := 0
	for n+signalfdInfoSize <= len(b) {
		info, ok := sf.source.TakeSignal(sf.Mask)
		if !ok {
			break
		}
		n += copy(b[n:], info[:])
	}
	switch {
	case n > 0:
		return n, nil
	case f.nonblocking():
		return 0, unix.EAGAIN
	}
	return 0, ErrWouldBlock
}

func (*SignalFD) Write(*OpenFile, []byte, int64) (int, error)   { return 0, unix.EINVAL }
func (*SignalFD) Seek(*OpenFile, int64, uint64) (uint64, error) { return 0, unix.ESPIPE }
func (*SignalFD) Node() *Node                                   { return nil }
func (sf *SignalFD) Queue() *Queue                              { return &sf.queue }
func (sf *SignalFD) Release()                                   { sf.released = true }

// Closed reports whether no descriptor refers to it any more.
func (sf *SignalFD) Closed() bool { return sf.released }

// Readiness: readable while a signal in its mask is pending for the
// thread that asks.
func (sf *SignalFD) Readiness() Events {
	if sf.source.SignalPending(sf.Mask) {
		return EventIn
	}
	return 0
}

// Changed tells its waiters that a signal became pending.
func (sf *SignalFD) Changed() { sf.queue.Notify(EventIn) }
