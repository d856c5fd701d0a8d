package kvm

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// VM is a KVM virtual machine.
type VM struct {
	fd           int
	sys          *System
	userSpaceMSR bool
	slotBytes    map[uint32]uint64 // size of each memory slot, for DirtyLog
}

// Close releases the VM. Its vCPUs must be closed first.
func (vm *VM) Close() error { return unix.Close(vm.fd) }

// SetMemoryRegion maps mem at guest-physical gpa in slot. flags are Mem*.
func (vm *VM) SetMemoryRegion(slot, flags uint32, gpa uint64, mem []byte) error {
	r := userspaceMemoryRegion{
		Slot:          slot,
		Flags:         flags,
		GuestPhysAddr: gpa,
		MemorySize:    uint64(len(mem)),
		UserspaceAddr: sliceAddr(mem),
	}
	if err := ioctlPtr(vm.fd, ioctlSetUserMemoryRegion, &r); err != nil {
		return fmt.Errorf("kvm: KVM_SET_USER_MEMORY_REGION slot %d gpa %#x size %#x: %w", slot, gpa, len(mem), err)
	}
	if vm.slotBytes == nil {
		vm.slotBytes = map[uint32]uint64{}
	}
	vm.slotBytes[slot] = uint64(len(mem))
	return nil
}

// DirtyLog fetches and clears the dirty-page bitmap of slot (registered
// with MemLogDirtyPages) into bitmap: one bit per 4 KiB page.
func (vm *VM) DirtyLog(slot uint32, bitmap []uint64) error {
	size, ok := vm.slotBytes[slot]
	if !ok {
		return fmt.Errorf("kvm: KVM_GET_DIRTY_LOG: no memory slot %d", slot)
	}
	// The kernel writes one bit per page of the slot: a shorter bitmap
	// would let it write past the Go slice.
	if pages := (size + 4095) / 4096; uint64(len(bitmap))*64 < pages {
		return fmt.Errorf("kvm: KVM_GET_DIRTY_LOG slot %d: bitmap of %d words is too small for %d pages", slot, len(bitmap), pages)
	}
	d := dirtyLog{Slot: slot, Bitmap: words64Addr(bitmap)}
	err := ioctlPtr(vm.fd, ioctlGetDirtyLog, &d)
	runtime.KeepAlive(bitmap)
	if err != nil {
		return fmt.Errorf("kvm: KVM_GET_DIRTY_LOG slot %d: %w", slot, err)
	}
	return nil
}

// EnableCap enables a VM capability with up to four arguments.
func (vm *VM) EnableCap(c Cap, args ...uint64) error {
	e := enableCap{Cap: uint32(c)}
	copy(e.Args[:], args)
	if err := ioctlPtr(vm.fd, ioctlEnableCap, &e); err != nil {
		return fmt.Errorf("kvm: KVM_ENABLE_CAP %v: %w", c, err)
	}
	return nil
}

// DenyGuestMSRs installs an MSR filter that denies every guest RDMSR/WRMSR
// and routes them to userspace as ExitX86RDMSR/ExitX86WRMSR, so no MSR
// access can escape the VMM's log. Hosts without the capability return a
// *MissingCapError.
func (vm *VM) DenyGuestMSRs() error {
	if !vm.userSpaceMSR {
		return &MissingCapError{Cap: CapX86UserSpaceMSR, Why: "routing guest MSR accesses to the VMM"}
	}
	if err := vm.EnableCap(CapX86UserSpaceMSR, MSRExitReasonFilter); err != nil {
		return err
	}
	// Linux rejects a default-deny filter with no ranges, so deny MSR 0
	// explicitly too (a zero bit in the bitmap denies).
	bitmap := make([]byte, 8)
	f := msrFilter{Flags: MSRFilterDefaultDeny}
	f.Ranges[0] = msrFilterRange{Flags: msrFilterRead | msrFilterWrite, NMSRs: 1, Base: 0, Bitmap: sliceAddr(bitmap)}
	err := ioctlPtr(vm.fd, ioctlX86SetMSRFilter, &f)
	runtime.KeepAlive(bitmap)
	if err != nil {
		return fmt.Errorf("kvm: KVM_X86_SET_MSR_FILTER: %w", err)
	}
	return nil
}

// CreateVCPU creates vCPU id and maps its kvm_run area. KVM prefers that a
// vCPU's ioctls come from one thread; callers keep each vCPU on its own
// locked OS thread.
func (vm *VM) CreateVCPU(id int) (*VCPU, error) {
	fd, err := ioctl(vm.fd, ioctlCreateVCPU, uintptr(id))
	if err != nil {
		return nil, fmt.Errorf("kvm: KVM_CREATE_VCPU %d: %w", id, err)
	}
	mem, err := unix.Mmap(int(fd), 0, vm.sys.vcpuMmapSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(int(fd))
		return nil, fmt.Errorf("kvm: mmap kvm_run of vCPU %d: %w", id, err)
	}
	return newVCPU(id, int(fd), mem), nil
}
