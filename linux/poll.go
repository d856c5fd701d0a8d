package linux

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	register(unix.SYS_POLL, "poll", sysPoll)
	register(unix.SYS_PPOLL, "ppoll", sysPpoll)
}

// pollEvent is what a thread in poll waits on: any pipe's change.
type pollEvent struct{}

// maxPollFDs bounds one poll's descriptors (RLIMIT_NOFILE).
const maxPollFDs = maxFDs

func sysPoll(k *Kernel, a args) (uint64, error) {
	timeout := time.Duration(-1)
	if ms := int32(a[2]); ms >= 0 {
		timeout = time.Duration(ms) * time.Millisecond
	}
	return k.poll(a[0], a[1], timeout)
}

func sysPpoll(k *Kernel, a args) (uint64, error) {
	timeout := time.Duration(-1)
	if a[2] != 0 {
		d, err := k.readTimespec(a[2])
		if err != nil {
			return 0, err
		}
		timeout = d
	}
	return k.poll(a[0], a[1], timeout)
}

// poll reports the descriptors that are ready; with none, it waits (up
// to timeout; negative: for ever) for a pipe to change and looks again.
func (k *Kernel) poll(va, n uint64, timeout time.Duration) (uint64, error) {
	if n > maxPollFDs {
		return 0, unix.EINVAL
	}
	fds := make([]byte, n*8)
	if err := k.proc().as.read(va, fds); err != nil {
		return 0, memErr(err)
	}
	ready := uint64(0)
	le := binary.LittleEndian
	for i := uint64(0); i < n; i++ {
		e := fds[i*8:]
		fd, events := int32(le.Uint32(e)), int16(le.Uint16(e[4:]))
		revents := int16(0)
		if fd >= 0 {
			revents = k.readiness(uint64(fd), events)
		}
		le.PutUint16(e[6:], uint16(revents))
		if revents != 0 {
			ready++
		}
	}
	if ready > 0 || timeout == 0 {
		return ready, memErr(k.proc().as.write(va, fds))
	}
	if timeout > 0 {
		now, err := k.now(unix.CLOCK_MONOTONIC)
		if err != nil {
			return 0, err
		}
		err = k.blockOn(pollEvent{})
		t := k.current()
		t.deadline, t.wakeErr = now+timeout, 0 // a tick past it ends the wait: 0 ready
		return 0, err
	}
	return 0, k.blockOn(pollEvent{})
}

// readiness is what fd is ready for, of events (POLLIN, POLLOUT), with
// POLLHUP, POLLERR and POLLNVAL as Linux reports them.
func (k *Kernel) readiness(fd uint64, events int16) int16 {
	f, err := k.proc().fds.get(fd)
	if err != nil {
		return unix.POLLNVAL
	}
	var r int16
	switch p := f.pipe; {
	case p == nil: // files and the console never make a reader or writer wait
		r = unix.POLLIN | unix.POLLOUT
	case f.readable():
		if len(p.buf) > 0 {
			r |= unix.POLLIN
		}
		if p.writers == 0 {
			r |= unix.POLLHUP
		}
	default:
		if len(p.buf) < pipeCapacity {
			r |= unix.POLLOUT
		}
		if p.readers == 0 {
			r |= unix.POLLERR
		}
	}
	if !f.readable() {
		r &^= unix.POLLIN
	}
	if !f.writable() {
		r &^= unix.POLLOUT
	}
	return r & (events | unix.POLLHUP | unix.POLLERR)
}
