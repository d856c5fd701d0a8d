package linux

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/linux/vfs"
)

// maxPollFDs bounds one poll's descriptors (RLIMIT_NOFILE).
const maxPollFDs = vfs.MaxFDs

func sysPoll(t *thread, a args) (uint64, error) {
	timeout := time.Duration(-1)
	if ms := int32(a[2]); ms >= 0 {
		timeout = time.Duration(ms) * time.Millisecond
	}
	return t.poll(a[0], a[1], timeout)
}

func sysPpoll(t *thread, a args) (uint64, error) {
	timeout, err := t.timeoutAt(a[2])
	if err != nil {
		return 0, err
	}
	return t.withSigmask(a[3], a[4], func() (uint64, error) { return t.poll(a[0], a[1], timeout) })
}

// timeoutAt reads a struct timespec timeout (ppoll, pselect6,
// epoll_pwait2): none (-1, for ever) when va is 0.
func (t *thread) timeoutAt(va uint64) (time.Duration, error) {
	if va == 0 {
		return -1, nil
	}
	return t.readTimespec(va)
}

// poll reports the descriptors that are ready; with none, it waits (up
// to timeout; negative: for ever) for one of them to change and looks
// again.
func (t *thread) poll(va, n uint64, timeout time.Duration) (uint64, error) {
	if n > maxPollFDs {
		return 0, unix.EINVAL
	}
	fds := make([]byte, n*8)
	if err := t.proc.as.Read(va, fds); err != nil {
		return 0, memErr(err)
	}
	ready := uint64(0)
	var polled []*openFile
	le := binary.LittleEndian
	for i := uint64(0); i < n; i++ {
		e := fds[i*8:]
		fd, events := int32(le.Uint32(e)), int16(le.Uint16(e[4:]))
		revents := int16(0)
		if fd >= 0 {
			var f *openFile
			revents, f = t.readiness(uint64(fd), events)
			polled = appendFile(polled, f)
		}
		le.PutUint16(e[6:], uint16(revents))
		if revents != 0 {
			ready++
		}
	}
	if ready > 0 || timeout == 0 || t.timeUp() {
		return ready, memErr(t.proc.as.Write(va, fds))
	}
	return t.waitReady(timeout, polled)
}

// timeUp reports, once, whether the running thread's poll or select has
// reached its timeout: it reports what it finds then, without waiting.
func (t *thread) timeUp() bool {
	up := t.timedOut
	t.timedOut = false
	return up
}

// waitReady waits (up to timeout; negative: for ever) for one of the
// polled files to change, and the call looks again.
func (t *thread) waitReady(timeout time.Duration, polled []*openFile) (uint64, error) {
	if timeout < 0 {
		return 0, t.blockOnFiles(polled...)
	}
	now, err := t.k.now(unix.CLOCK_MONOTONIC)
	if err != nil {
		return 0, err
	}
	err = t.blockOnFiles(polled...)
	t.deadline, t.wakeErr = now+timeout, 0 // a tick past it ends the wait: 0 ready
	return 0, err
}

// readiness is what fd is ready for, of events (POLLIN, POLLOUT), with
// POLLHUP, POLLERR and POLLNVAL as Linux reports them, and its file (nil
// for a descriptor not open).
func (t *thread) readiness(fd uint64, events int16) (int16, *openFile) {
	f, err := t.proc.fds.Get(fd)
	if err != nil {
		return unix.POLLNVAL, nil
	}
	return int16(f.Readiness(vfs.Events(events))), f
}

// appendFile adds f to the files a poll waits on if its readiness can
// change (it has a queue); a file polled twice is registered once.
func appendFile(polled []*openFile, f *openFile) []*openFile {
	if f == nil || f.Queue() == nil {
		return polled
	}
	return append(polled, f)
}

func sysSelect(t *thread, a args) (uint64, error) {
	timeout := time.Duration(-1)
	if a[4] != 0 {
		var b [16]byte
		if err := t.proc.as.Read(a[4], b[:]); err != nil {
			return 0, memErr(err)
		}
		if timeout = timeval(b[:]); timeout < 0 {
			return 0, unix.EINVAL
		}
	}
	return t.selectFDs(a[0], [3]uint64{a[1], a[2], a[3]}, timeout)
}

// sysPselect6 takes its signal mask as {const sigset_t *, size_t} at
// a[5].
func sysPselect6(t *thread, a args) (uint64, error) {
	timeout, err := t.timeoutAt(a[4])
	if err != nil {
		return 0, err
	}
	var mask [16]byte
	if a[5] != 0 {
		if err := t.proc.as.Read(a[5], mask[:]); err != nil {
			return 0, memErr(err)
		}
	}
	le := binary.LittleEndian
	return t.withSigmask(le.Uint64(mask[:]), le.Uint64(mask[8:]), func() (uint64, error) {
		return t.selectFDs(a[0], [3]uint64{a[1], a[2], a[3]}, timeout)
	})
}

// selectFDs is select over the read, write and except sets at sets (0:
// none) of descriptors below n, as poll does it.
func (t *thread) selectFDs(n uint64, sets [3]uint64, timeout time.Duration) (uint64, error) {
	if n > vfs.MaxFDs {
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
		if err := t.proc.as.Read(va, b); err != nil {
			return 0, memErr(err)
		}
		for w := range in[i] {
			in[i][w] = binary.LittleEndian.Uint64(b[w*8:])
		}
	}
	ready := uint64(0)
	var polled []*openFile
	events := [3]int16{unix.POLLIN, unix.POLLOUT, unix.POLLPRI}
	for fd := uint64(0); fd < n; fd++ {
		for i := range in {
			if in[i][fd/64]&(1<<(fd%64)) == 0 {
				continue
			}
			r, f := t.readiness(fd, events[i])
			polled = appendFile(polled, f)
			if r&unix.POLLNVAL != 0 {
				return 0, unix.EBADF
			}
			if i < 2 && r != 0 || i == 2 && r&unix.POLLPRI != 0 {
				out[i][fd/64] |= 1 << (fd % 64)
				ready++
			}
		}
	}
	if ready == 0 && timeout != 0 && !t.timeUp() {
		return t.waitReady(timeout, polled)
	}
	for i, va := range sets {
		if va == 0 {
			continue
		}
		b := make([]byte, words*8)
		for w, v := range out[i] {
			binary.LittleEndian.PutUint64(b[w*8:], v)
		}
		if err := t.proc.as.Write(va, b); err != nil {
			return 0, memErr(err)
		}
	}
	return ready, nil
}
