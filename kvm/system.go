// Package kvm is a thin, typed layer over the Linux KVM ioctl API for x86-64:
// the system (/dev/kvm), VMs, memory slots and vCPUs. It is the only package
// (with package pmu, for perf events) in reprise that issues raw syscalls
// or imports unsafe (in *_unsafe.go files).
package kvm

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// DevicePath is where KVM lives.
const DevicePath = "/dev/kvm"

var (
	// ErrNoDevice means there is no KVM on this host.
	ErrNoDevice = errors.New("kvm: " + DevicePath + " does not exist: this host has no KVM (load kvm_intel or kvm_amd, or enable nested virtualisation)")
	// ErrPermission means KVM exists but this user may not open it.
	ErrPermission = errors.New("kvm: permission denied opening " + DevicePath + ": add your user to the 'kvm' group or run as root")
)

// MissingCapError names a KVM capability reprise needs and the host lacks.
type MissingCapError struct {
	Cap Cap
	Why string
}

func (e *MissingCapError) Error() string {
	return fmt.Sprintf("kvm: host lacks %v, needed for %s", e.Cap, e.Why)
}

// System is an open /dev/kvm.
type System struct {
	fd           int
	vcpuMmapSize int
}

// requiredCaps are checked once at Open so failures are early and explicit.
var requiredCaps = []struct {
	cap Cap
	why string
}{
	{CapUserMemory, "guest RAM mapping"},
	{CapExtCPUID, "a fixed CPUID table"},
	{CapImmediateExit, "kicking vCPUs without losing a wake-up"},
	{CapSyncRegs, "register access without an ioctl per exit"},
}

// Open opens path (normally DevicePath), checks the API version and the
// capabilities reprise depends on.
func Open(path string) (*System, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, ErrNoDevice
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return nil, ErrPermission
	case err != nil:
		return nil, fmt.Errorf("kvm: open %s: %w", path, err)
	}
	s := &System{fd: fd}
	if err := s.check(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return s, nil
}

func (s *System) check() error {
	v, err := ioctl(s.fd, ioctlGetAPIVersion, 0)
	if err != nil {
		return fmt.Errorf("kvm: KVM_GET_API_VERSION: %w", err)
	}
	if v != APIVersion {
		return fmt.Errorf("kvm: API version %d, want %d", v, APIVersion)
	}
	for _, rc := range requiredCaps {
		n, err := s.CheckExtension(rc.cap)
		if err != nil {
			return err
		}
		if n == 0 {
			return &MissingCapError{Cap: rc.cap, Why: rc.why}
		}
	}
	sz, err := ioctl(s.fd, ioctlGetVCPUMmapSize, 0)
	if err != nil {
		return fmt.Errorf("kvm: KVM_GET_VCPU_MMAP_SIZE: %w", err)
	}
	s.vcpuMmapSize = int(sz)
	return nil
}

// Close closes /dev/kvm. VMs created from it stay valid.
func (s *System) Close() error { return unix.Close(s.fd) }

// CheckExtension returns KVM_CHECK_EXTENSION for c (0 = unsupported).
func (s *System) CheckExtension(c Cap) (int, error) {
	n, err := ioctl(s.fd, ioctlCheckExtension, uintptr(c))
	if err != nil {
		return 0, fmt.Errorf("kvm: KVM_CHECK_EXTENSION %v: %w", c, err)
	}
	return int(n), nil
}

// SupportedCPUID returns the CPUID leaves KVM can present on this host.
func (s *System) SupportedCPUID() ([]CPUIDEntry, error) {
	for n := 64; n <= 4096; n *= 2 {
		b := newCPUID2Buffer(n)
		b.header().Nent = uint32(n)
		_, err := ioctl(s.fd, ioctlGetSupportedCPUID, b.ptr())
		if errors.Is(err, unix.E2BIG) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("kvm: KVM_GET_SUPPORTED_CPUID: %w", err)
		}
		return append([]CPUIDEntry(nil), b.entries()...), nil
	}
	return nil, errors.New("kvm: KVM_GET_SUPPORTED_CPUID: more than 4096 entries")
}

// CreateVM creates an empty VM (no in-kernel irqchip: reprise injects every
// interrupt itself so that each one passes through code that can log it).
func (s *System) CreateVM() (*VM, error) {
	fd, err := ioctl(s.fd, ioctlCreateVM, 0)
	if err != nil {
		return nil, fmt.Errorf("kvm: KVM_CREATE_VM: %w", err)
	}
	vm := &VM{fd: int(fd), sys: s}
	if n, _ := s.CheckExtension(CapX86UserSpaceMSR); n != 0 {
		vm.userSpaceMSR = true
	}
	return vm, nil
}

// Usable reports whether KVM at path can be opened and has what reprise
// needs; the error says why not.
func Usable(path string) error {
	s, err := Open(path)
	if err != nil {
		return err
	}
	return s.Close()
}
