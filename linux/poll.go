package linux

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	register(unix.SYS_POLL, "poll", 3, sysPoll)
	register(unix.SYS_PPOLL, "ppoll", 5, sysPpoll)
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
	if ready > 0 || timeout == 0 || k.timeUp() {
		return ready, memErr(k.proc().as.write(va, fds))
	}
	return k.waitReady(timeout)
}

// timeUp reports, once, whether the running thread's poll or select has
// reached its timeout: it reports what it finds then, without waiting.
func (k *Kernel) timeUp() bool {
	t := k.current()
	up := t.timedOut
	t.timedOut = false
	return up
}

// waitReady waits (up to timeout; negative: for ever) for a pipe to
// change, and the call looks again.
func (k *Kernel) waitReady(timeout time.Duration) (uint64, error) {
	if timeout < 0 {
		return 0, k.blockOn(pollEvent{})
	}
	now, err := k.now(unix.CLOCK_MONOTONIC)
	if err != nil {
		return 0, err
	}
	err = k.blockOn(pollEvent{})
	t := k.current()
	t.deadline, t.wakeErr = now+timeout, 0 // a tick past it ends the wait: 0 ready
	return 0, err
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
		if len(p.buf) < p.capacity {
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

func init() {
	register(unix.SYS_SELECT, "select", 5, func(k *Kernel, a args) (uint64, error) {
		timeout := time.Duration(-1)
		if a[4] != 0 {
			var b [16]byte
			if err := k.proc().as.read(a[4], b[:]); err != nil {
				return 0, memErr(err)
			}
			if timeout = timeval(b[:]); timeout < 0 {
				return 0, unix.EINVAL
			}
		}
		return k.selectFDs(a[0], [3]uint64{a[1], a[2], a[3]}, timeout)
	})
	register(unix.SYS_PSELECT6, "pselect6", 6, func(k *Kernel, a args) (uint64, error) {
		timeout := time.Duration(-1)
		if a[4] != 0 {
			d, err := k.readTimespec(a[4])
			if err != nil {
				return 0, err
			}
			timeout = d
		}
		return k.selectFDs(a[0], [3]uint64{a[1], a[2], a[3]}, timeout)
	})
}

// selectFDs is select over the read, write and except sets at sets (0:
// none) of descriptors below n, as poll does it.
func (k *Kernel) selectFDs(n uint64, sets [3]uint64, timeout time.Duration) (uint64, error) {
	if n > maxFDs {
		return 0, unix.EINVAL
	}
	words := (n + 63) / 64
	var in, out [3][]uint64
	for i, va := range sets {
		in[i], out[i] = make([]uint64, words), make([]uint64, words)
		if va == 0 {
			continue
		}
		b := make([]byte, words*8)
		if err := k.proc().as.read(va, b); err != nil {
			return 0, memErr(err)
		}
		for w := range in[i] {
			in[i][w] = binary.LittleEndian.Uint64(b[w*8:])
		}
	}
	ready := uint64(0)
	events := [3]int16{unix.POLLIN, unix.POLLOUT, unix.POLLPRI}
	for fd := uint64(0); fd < n; fd++ {
		for i := range in {
			if in[i][fd/64]&(1<<(fd%64)) == 0 {
				continue
			}
			r := k.readiness(fd, events[i])
			if r&unix.POLLNVAL != 0 {
				return 0, unix.EBADF
			}
			if i < 2 && r != 0 || i == 2 && r&unix.POLLPRI != 0 {
				out[i][fd/64] |= 1 << (fd % 64)
				ready++
			}
		}
	}
	if ready == 0 && timeout != 0 && !k.timeUp() {
		return k.waitReady(timeout)
	}
	for i, va := range sets {
		if va == 0 {
			continue
		}
		b := make([]byte, words*8)
		for w, v := range out[i] {
			binary.LittleEndian.PutUint64(b[w*8:], v)
		}
		if err := k.proc().as.write(va, b); err != nil {
			return 0, memErr(err)
		}
	}
	return ready, nil
}
