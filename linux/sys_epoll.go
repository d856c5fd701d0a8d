package linux

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/linux/vfs"
)

// epollEventSize is struct epoll_event on x86-64: packed, 4 + 8 bytes.
const epollEventSize = 12

// maxEpollEvents is epoll_wait's bound on maxevents (EP_MAX_EVENTS).
const maxEpollEvents = (1<<31 - 1) / epollEventSize

func sysEpollCreate(t *thread, a args) (uint64, error) {
	if int32(a[0]) <= 0 {
		return 0, unix.EINVAL
	}
	return t.epollCreate(0)
}

func sysEpollCreate1(t *thread, a args) (uint64, error) {
	if a[0]&^unix.EPOLL_CLOEXEC != 0 {
		return 0, unix.EINVAL
	}
	return t.epollCreate(a[0])
}

func (t *thread) epollCreate(flags uint64) (uint64, error) {
	return t.install(vfs.NewEpoll(t.k.budget), flags&unix.EPOLL_CLOEXEC != 0)
}

// install gives a new open file the lowest free descriptor, releasing it
// if there is none.
func (t *thread) install(f *openFile, cloexec bool) (uint64, error) {
	fd, err := t.proc.fds.Install(f, cloexec, 0)
	if err != nil {
		f.Release()
		return 0, err
	}
	return uint64(fd), nil
}

// sysEpollCtl checks in Linux's order: the event (EFAULT), both
// descriptors (EBADF), the target's poll (EPERM), the instance (EINVAL).
func sysEpollCtl(t *thread, a args) (uint64, error) {
	op, fd := a[1], int(int32(a[2]))
	var events uint32
	var data uint64
	if op != unix.EPOLL_CTL_DEL {
		var b [epollEventSize]byte
		if err := t.proc.as.Read(a[3], b[:]); err != nil {
			return 0, memErr(err)
		}
		events, data = binary.LittleEndian.Uint32(b[:]), binary.LittleEndian.Uint64(b[4:])
	}
	epf, err := t.proc.fds.Get(a[0])
	if err != nil {
		return 0, err
	}
	target, err := t.proc.fds.Get(uint64(uint32(fd)))
	if err != nil {
		return 0, err
	}
	if !vfs.Pollable(target) {
		return 0, unix.EPERM
	}
	ep := vfs.EpollOf(epf)
	if ep == nil || epf == target {
		return 0, unix.EINVAL
	}
	if events&vfs.EpollExclusive != 0 && (op != unix.EPOLL_CTL_ADD || vfs.EpollOf(target) != nil ||
		events&^uint32(vfs.EpollExclusive|unix.EPOLLIN|unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP|vfs.EpollWakeup|vfs.EpollET) != 0) {
		return 0, unix.EINVAL
	}
	events |= unix.EPOLLERR | unix.EPOLLHUP
	switch op {
	case unix.EPOLL_CTL_ADD:
		return 0, ep.Add(target, fd, events, data)
	case unix.EPOLL_CTL_MOD:
		return 0, ep.Modify(target, fd, events, data)
	case unix.EPOLL_CTL_DEL:
		return 0, ep.Delete(target, fd)
	}
	return 0, unix.EINVAL
}

func sysEpollWait(t *thread, a args) (uint64, error) {
	return t.epollWait(a[0], a[1], a[2], msTimeout(a[3]))
}

// sysEpollPwait is epoll_wait with a signal mask held while it waits.
func sysEpollPwait(t *thread, a args) (uint64, error) {
	return t.withSigmask(a[4], a[5], func() (uint64, error) { return t.epollWait(a[0], a[1], a[2], msTimeout(a[3])) })
}

func sysEpollPwait2(t *thread, a args) (uint64, error) {
	timeout, err := t.timeoutAt(a[3])
	if err != nil {
		return 0, err
	}
	return t.withSigmask(a[4], a[5], func() (uint64, error) { return t.epollWait(a[0], a[1], a[2], timeout) })
}

// msTimeout is a timeout in milliseconds as poll and epoll_wait take it:
// negative waits for ever.
func msTimeout(ms uint64) time.Duration {
	if int32(ms) < 0 {
		return -1
	}
	return time.Duration(int32(ms)) * time.Millisecond
}

// epollWait reports up to max ready items of the instance epfd at va;
// with none, it waits (up to timeout; negative: for ever) for one.
func (t *thread) epollWait(epfd, va, max uint64, timeout time.Duration) (uint64, error) {
	if int32(max) <= 0 || max > maxEpollEvents {
		return 0, unix.EINVAL
	}
	if !userRange(va, max*epollEventSize) {
		return 0, unix.EFAULT
	}
	epf, err := t.proc.fds.Get(epfd)
	if err != nil {
		return 0, err
	}
	ep := vfs.EpollOf(epf)
	if ep == nil {
		return 0, unix.EINVAL
	}
	ready := ep.Wait(int(max))
	if len(ready) == 0 && timeout != 0 && !t.timeUp() {
		return t.waitReady(timeout, []*openFile{epf})
	}
	b := make([]byte, len(ready)*epollEventSize)
	for i, e := range ready {
		binary.LittleEndian.PutUint32(b[i*epollEventSize:], e.Events)
		binary.LittleEndian.PutUint64(b[i*epollEventSize+4:], e.Data)
	}
	return uint64(len(ready)), memErr(t.proc.as.Write(va, b))
}

func sysEventfd(t *thread, a args) (uint64, error) { return t.eventfd(a[0], 0) }

func sysEventfd2(t *thread, a args) (uint64, error) {
	if a[1]&^(unix.EFD_SEMAPHORE|unix.EFD_CLOEXEC|unix.EFD_NONBLOCK) != 0 {
		return 0, unix.EINVAL
	}
	return t.eventfd(a[0], a[1])
}

func (t *thread) eventfd(count, flags uint64) (uint64, error) {
	return t.install(vfs.NewEventFD(uint64(uint32(count)), flags), flags&unix.EFD_CLOEXEC != 0)
}
