package pmu

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// OverflowSignal is what the counter sends its vCPU thread on overflow. It is
// the VMM's kick signal (vmm/vcpu.go) for the same reason: the Go runtime
// already handles SIGURG on every thread and ignores it outside Go code, so
// it needs no signal.Notify, and a vCPU thread inside KVM_RUN gets EINTR,
// which its loop treats as routine. The counter's owner is the thread
// (F_OWNER_TID), so no other thread is disturbed.
const OverflowSignal = unix.SIGURG

// Counter counts one vCPU thread's guest-mode retired conditional branches
// and interrupts that thread when the count reaches a set value.
//
// All methods except Close must be called while the vCPU is stopped,
// normally on the vCPU thread between KVM_RUN calls. The counter only counts
// guest mode, so it stands still while the vCPU is stopped and nothing is
// lost between a read and a reset.
type Counter struct {
	fd   int
	tid  int
	ev   Event
	base uint64 // branches counted before the last PERF_EVENT_IOC_RESET
}

// OpenCounter opens the branch counter of vCPU thread tid (a kernel thread
// id, from unix.Gettid on that thread). The counter starts at zero and its
// first overflow is after sampleAt branches; zero means none until
// SetOverflow. On overflow the kernel sends OverflowSignal to tid.
func OpenCounter(tid int, sampleAt uint64) (*Counter, error) {
	ev, err := hostEvent()
	if err != nil {
		return nil, err
	}
	period := sampleAt
	if period == 0 {
		period = noOverflow
	}
	attr := branchAttr(ev, period)
	fd, err := unix.PerfEventOpen(&attr, tid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		if errno, ok := err.(unix.Errno); ok && errno != unix.ESRCH {
			return nil, &UnavailableError{Reason: explainOpen(ev, err, probeHost()), Err: err}
		}
		return nil, fmt.Errorf("pmu: open %v counter for thread %d: %w", ev, tid, err)
	}
	c := &Counter{fd: fd, tid: tid, ev: ev}
	if err := c.signalOwner(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return c, nil
}

// signalOwner makes an overflow signal the vCPU thread: the fd's owner is
// that thread, its signal OverflowSignal (with siginfo), and O_ASYNC turns
// the kernel's overflow wake-up into that signal. This is rr's setup.
func (c *Counter) signalOwner() error {
	if err := setOwnerThread(c.fd, c.tid); err != nil {
		return fmt.Errorf("pmu: fcntl(F_SETOWN_EX, thread %d) on branch counter: %w", c.tid, err)
	}
	if _, err := unix.FcntlInt(uintptr(c.fd), unix.F_SETSIG, int(OverflowSignal)); err != nil {
		return fmt.Errorf("pmu: fcntl(F_SETSIG) on branch counter of thread %d: %w", c.tid, err)
	}
	fl, err := unix.FcntlInt(uintptr(c.fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(c.fd), unix.F_SETFL, fl|unix.O_ASYNC)
	}
	if err != nil {
		return fmt.Errorf("pmu: fcntl(F_SETFL, O_ASYNC) on branch counter of thread %d: %w", c.tid, err)
	}
	return nil
}

// Event is the raw event being counted.
func (c *Counter) Event() Event { return c.ev }

// Read returns the branches retired in guest mode since the counter opened.
func (c *Counter) Read() (uint64, error) {
	var buf [8]byte
	n, err := unix.Read(c.fd, buf[:])
	if err != nil {
		return 0, fmt.Errorf("pmu: read branch counter of thread %d: %w", c.tid, err)
	}
	if n != len(buf) {
		return 0, fmt.Errorf("pmu: read branch counter of thread %d: %d bytes, want %d", c.tid, n, len(buf))
	}
	return c.base + binary.NativeEndian.Uint64(buf[:]), nil
}

// SetOverflow arranges for the next overflow signal once the count reaches
// at (the hardware delivers it some branches late; see RunTo). at must be
// above the current count.
//
// The sample period counts from the last reset, so, as rr does, this folds
// the current count into base, resets the hardware count to zero, and sets
// the period to the distance left. (Kernels before 4.7 applied a new period
// only after the next overflow; rr probes for that bug, reprise needs far
// newer kernels anyway.)
func (c *Counter) SetOverflow(at uint64) error {
	now, err := c.Read()
	if err != nil {
		return err
	}
	if at <= now {
		return fmt.Errorf("pmu: overflow at %d branches requested for thread %d, but %d already counted", at, c.tid, now)
	}
	if err := unix.IoctlSetInt(c.fd, unix.PERF_EVENT_IOC_RESET, 0); err != nil {
		return fmt.Errorf("pmu: PERF_EVENT_IOC_RESET on branch counter of thread %d: %w", c.tid, err)
	}
	c.base = now
	if err := ioctlSetPeriod(c.fd, at-now); err != nil {
		return fmt.Errorf("pmu: PERF_EVENT_IOC_PERIOD %d on branch counter of thread %d: %w", at-now, c.tid, err)
	}
	return nil
}

// Close releases the counter.
func (c *Counter) Close() error {
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	if err != nil {
		return fmt.Errorf("pmu: close branch counter of thread %d: %w", c.tid, err)
	}
	return nil
}
