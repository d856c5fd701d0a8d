package kvm

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ioctl issues an ioctl and returns its result, retrying it when a signal
// interrupted it (EINTR): the Go runtime's preemption signals and the vCPU
// kicks would otherwise fail set-up ioctls such as KVM_CREATE_VM at random.
func ioctl(fd int, req uintptr, arg uintptr) (uintptr, error) {
	for {
		r, err := ioctlOnce(fd, req, arg)
		if err != unix.EINTR {
			return r, err
		}
	}
}

// ioctlOnce issues a raw ioctl once; errno is returned as a bare
// unix.Errno so the hot KVM_RUN path, which must see EINTR, does not
// allocate.
func ioctlOnce(fd int, req uintptr, arg uintptr) (uintptr, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, arg)
	if errno != 0 {
		return r, errno
	}
	return r, nil
}

// ioctlPtr passes a pointer to a Go value. The value must not contain Go
// pointers (all structs in this package are plain data).
func ioctlPtr[T any](fd int, req uintptr, p *T) error {
	_, err := ioctl(fd, req, uintptr(unsafe.Pointer(p)))
	return err
}

// ioctlMSRs issues KVM_GET_MSRS or KVM_SET_MSRS, which return how many
// entries they processed.
func ioctlMSRs(fd int, req uintptr, m *msrs) (int, error) {
	n, err := ioctl(fd, req, uintptr(unsafe.Pointer(m)))
	return int(n), err
}

// sliceAddr is the userspace address of a byte slice's backing array.
func sliceAddr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b[0])))
}

// words64Addr is the userspace address of a []uint64's backing array.
func words64Addr(b []uint64) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b[0])))
}

// cpuid2Buffer lays out a struct kvm_cpuid2 with room for n entries.
type cpuid2Buffer struct {
	buf []byte
}

func newCPUID2Buffer(n int) *cpuid2Buffer {
	return &cpuid2Buffer{buf: make([]byte, int(unsafe.Sizeof(cpuidHeader{}))+n*int(unsafe.Sizeof(CPUIDEntry{})))}
}

func (c *cpuid2Buffer) header() *cpuidHeader { return (*cpuidHeader)(unsafe.Pointer(&c.buf[0])) }

func (c *cpuid2Buffer) entries() []CPUIDEntry {
	n := int(c.header().Nent)
	p := unsafe.Pointer(&c.buf[unsafe.Sizeof(cpuidHeader{})])
	return unsafe.Slice((*CPUIDEntry)(p), n)
}

func (c *cpuid2Buffer) ptr() uintptr { return uintptr(unsafe.Pointer(&c.buf[0])) }
