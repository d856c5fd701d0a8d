//go:build linux

package pmu

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The two calls below pass a pointer to the kernel, and golang.org/x/sys/unix
// has no wrapper for either: fcntl(F_SETOWN_EX) takes a struct f_owner_ex
// (there is no F_SETOWN_EX helper, and on current kernels plain F_SETOWN
// with a thread id signals the whole process, PIDTYPE_TGID, so any thread
// may take the signal), and PERF_EVENT_IOC_PERIOD takes a __u64
// (unix.IoctlSetPointerInt passes an int32).

// fOwnerEx mirrors struct f_owner_ex (include/uapi/asm-generic/fcntl.h).
type fOwnerEx struct {
	Type int32 // F_OWNER_TID, F_OWNER_PID or F_OWNER_PGRP
	PID  int32
}

// fOwnerTID is F_OWNER_TID: signal one thread, not its process.
const fOwnerTID = 0

// setOwnerThread makes thread tid the owner of fd, so the fd's signals go to
// that thread only.
func setOwnerThread(fd, tid int) error {
	own := fOwnerEx{Type: fOwnerTID, PID: int32(tid)}
	_, _, errno := unix.Syscall(unix.SYS_FCNTL, uintptr(fd), unix.F_SETOWN_EX, uintptr(unsafe.Pointer(&own)))
	if errno != 0 {
		return errno
	}
	return nil
}

// ioctlSetPeriod issues PERF_EVENT_IOC_PERIOD: overflow every period events.
func ioctlSetPeriod(fd int, period uint64) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_PERIOD, uintptr(unsafe.Pointer(&period)))
	if errno != 0 {
		return errno
	}
	return nil
}
