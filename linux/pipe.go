package linux

import "golang.org/x/sys/unix"

// A pipe's capacity: Linux's default, and what a pipe made while the
// program's pipes hold more than pipe-user-pages-soft (16 384 pages) gets
// instead (two pages).
const (
	pipeCapacity      = 64 << 10
	smallPipeCapacity = 8 << 10
	pipeSoftBytes     = 64 << 20
)

// pipe is a pipe's buffer and how many open files hold each end. A
// reader of an empty pipe and a writer of a full one block on the pipe
// and retry when it changes.
type pipe struct {
	buf      []byte // what is written and not yet read
	capacity int    // charged to the budget while either end is open
	// store is the buffer's array, capacity long once the pipe is
	// written: buf lies in it, moved to its start when there is no room
	// after it, so a pipe never holds more than its capacity.
	store            []byte
	readers, writers int
}

// read takes up to len(b) bytes; an empty pipe with writers blocks.
func (p *pipe) read(k *Kernel, f *openFile, b []byte) (int, error) {
	if len(p.buf) == 0 {
		switch {
		case p.writers == 0:
			return 0, nil
		case f.flags&unix.O_NONBLOCK != 0:
			return 0, unix.EAGAIN
		}
		return 0, k.current().blockOn(p)
	}
	n := copy(b, p.buf)
	p.buf = p.buf[n:]
	k.pipeChanged(p)
	return n, nil
}

// write adds what fits; a full pipe with readers blocks, one without
// readers is EPIPE.
func (p *pipe) write(k *Kernel, f *openFile, b []byte) (int, error) {
	switch {
	case p.readers == 0:
		sig := uint64(unix.SIGPIPE)
		if err := k.signal(k.current(), sig, siginfo(sig, siUser, uint64(k.proc().pid))); err != nil {
			return 0, err
		}
		return 0, unix.EPIPE
	case len(p.buf) >= p.capacity && f.flags&unix.O_NONBLOCK != 0:
		return 0, unix.EAGAIN
	case len(p.buf) >= p.capacity:
		return 0, k.current().blockOn(p)
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
	k.pipeChanged(p)
	return n, nil
}

// closeEnd releases one end: readers see end of file, writers EPIPE.
func (p *pipe) closeEnd(k *Kernel, writer bool) {
	if writer {
		p.writers--
	} else {
		p.readers--
	}
	if p.readers == 0 && p.writers == 0 {
		k.budget.release(pipeBytes, int64(p.capacity))
		p.buf, p.store = nil, nil
	}
	k.pipeChanged(p)
}

// pipeChanged wakes the threads waiting on p, and those in poll.
func (k *Kernel) pipeChanged(p *pipe) {
	k.wakeAll(p)
	k.wakeAll(pollEvent{})
}
