package kvm

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// VCPU is one virtual CPU and its shared kvm_run area.
type VCPU struct {
	id     int
	fd     int
	runMem []byte
	run    *run
}

// ID is the vCPU index given at creation.
func (c *VCPU) ID() int { return c.id }

// Close unmaps kvm_run and closes the vCPU.
func (c *VCPU) Close() error {
	if err := unix.Munmap(c.runMem); err != nil {
		return fmt.Errorf("kvm: munmap kvm_run of vCPU %d: %w", c.id, err)
	}
	return unix.Close(c.fd)
}

// Run enters the guest until the next exit. It returns unix.EINTR (bare,
// not wrapped) when a signal or ImmediateExit interrupted it; any other
// error is fatal for the vCPU.
func (c *VCPU) Run() error {
	_, err := ioctlOnce(c.fd, ioctlRun, 0)
	if err == unix.EINTR {
		return unix.EINTR
	}
	if err != nil {
		return fmt.Errorf("kvm: KVM_RUN vCPU %d: %w", c.id, err)
	}
	return nil
}

// ExitReason is why the last Run returned.
func (c *VCPU) ExitReason() ExitReason { return c.run.ExitReason }

// ReadyForInterrupt reports, after an exit, whether KVM_INTERRUPT may be
// issued now (interrupts enabled and no interrupt shadow).
func (c *VCPU) ReadyForInterrupt() bool { return c.run.ReadyForInterruptInjection != 0 }

// InterruptsEnabled is the guest's RFLAGS.IF at the last exit.
func (c *VCPU) InterruptsEnabled() bool { return c.run.IFFlag != 0 }

// RequestInterruptWindow asks KVM to exit with ExitIRQWindowOpen as soon as
// the guest can take an interrupt.
func (c *VCPU) RequestInterruptWindow(on bool) { c.run.RequestInterruptWindow = b2u8(on) }

// Interrupt queues an external interrupt with the given vector for the next
// entry (KVM_INTERRUPT, userspace irqchip).
func (c *VCPU) Interrupt(vector uint8) error {
	irq := interrupt{IRQ: uint32(vector)}
	return vcpuIoctl(c, ioctlInterrupt, fmt.Sprintf("KVM_INTERRUPT vector %#x", vector), &irq)
}

// vcpuIoctl issues a vCPU ioctl that passes one struct, naming the operation
// and the vCPU in any error.
func vcpuIoctl[T any](c *VCPU, req uintptr, op string, v *T) error {
	if err := ioctlPtr(c.fd, req, v); err != nil {
		return fmt.Errorf("kvm: %s vCPU %d: %w", op, c.id, err)
	}
	return nil
}

// Regs reads the general registers with KVM_GET_REGS.
func (c *VCPU) Regs() (r Regs, err error) {
	return r, vcpuIoctl(c, ioctlGetRegs, "KVM_GET_REGS", &r)
}

// SetRegs writes the general registers with KVM_SET_REGS.
func (c *VCPU) SetRegs(r Regs) error { return vcpuIoctl(c, ioctlSetRegs, "KVM_SET_REGS", &r) }

// Sregs reads the special registers.
func (c *VCPU) Sregs() (s Sregs, err error) {
	return s, vcpuIoctl(c, ioctlGetSregs, "KVM_GET_SREGS", &s)
}

// SetSregs writes the special registers.
func (c *VCPU) SetSregs(s Sregs) error { return vcpuIoctl(c, ioctlSetSregs, "KVM_SET_SREGS", &s) }

// Events reads pending exception/interrupt/NMI state.
func (c *VCPU) Events() (e VCPUEvents, err error) {
	return e, vcpuIoctl(c, ioctlGetVCPUEvents, "KVM_GET_VCPU_EVENTS", &e)
}

// SetEvents writes pending exception/interrupt/NMI state and the
// interrupt shadow (those Flags marks valid).
func (c *VCPU) SetEvents(e VCPUEvents) error {
	return vcpuIoctl(c, ioctlSetVCPUEvents, "KVM_SET_VCPU_EVENTS", &e)
}

// MaxCPUIDEntries is KVM_MAX_CPUID_ENTRIES: the largest table
// KVM_SET_CPUID2 takes.
const MaxCPUIDEntries = 256

// SetCPUID installs the CPUID table the guest will see: 1 to
// MaxCPUIDEntries entries (a table comes from a tape too, so its size is
// checked here rather than trusted).
func (c *VCPU) SetCPUID(entries []CPUIDEntry) error {
	if len(entries) == 0 || len(entries) > MaxCPUIDEntries {
		return fmt.Errorf("kvm: KVM_SET_CPUID2 vCPU %d: %d entries, want 1 to %d", c.id, len(entries), MaxCPUIDEntries)
	}
	b := newCPUID2Buffer(len(entries))
	b.header().Nent = uint32(len(entries))
	copy(b.entries(), entries)
	if _, err := ioctl(c.fd, ioctlSetCPUID2, b.ptr()); err != nil {
		return fmt.Errorf("kvm: KVM_SET_CPUID2 vCPU %d (%d entries): %w", c.id, len(entries), err)
	}
	return nil
}

// SetMSRs writes model-specific registers with KVM_SET_MSRS.
func (c *VCPU) SetMSRs(entries ...MSREntry) error {
	if len(entries) == 0 || len(entries) > maxMSRs {
		return fmt.Errorf("kvm: KVM_SET_MSRS vCPU %d: %d entries, want 1 to %d", c.id, len(entries), maxMSRs)
	}
	m := msrs{N: uint32(len(entries))}
	copy(m.Entries[:], entries)
	n, err := ioctlMSRs(c.fd, ioctlSetMSRs, &m)
	if err != nil {
		return fmt.Errorf("kvm: KVM_SET_MSRS vCPU %d: %w", c.id, err)
	}
	if n != len(entries) {
		return fmt.Errorf("kvm: KVM_SET_MSRS vCPU %d: MSR %#x refused", c.id, entries[n].Index)
	}
	return nil
}

// MSRs reads the model-specific registers listed by index.
func (c *VCPU) MSRs(index ...uint32) ([]uint64, error) {
	if len(index) == 0 || len(index) > maxMSRs {
		return nil, fmt.Errorf("kvm: KVM_GET_MSRS vCPU %d: %d entries, want 1 to %d", c.id, len(index), maxMSRs)
	}
	m := msrs{N: uint32(len(index))}
	for i, x := range index {
		m.Entries[i].Index = x
	}
	n, err := ioctlMSRs(c.fd, ioctlGetMSRs, &m)
	if err != nil {
		return nil, fmt.Errorf("kvm: KVM_GET_MSRS vCPU %d: %w", c.id, err)
	}
	if n != len(index) {
		return nil, fmt.Errorf("kvm: KVM_GET_MSRS vCPU %d: MSR %#x unreadable", c.id, index[n])
	}
	out := make([]uint64, len(index))
	for i := range out {
		out[i] = m.Entries[i].Data
	}
	return out, nil
}

// FPU reads the x87 and SSE state with KVM_GET_FPU.
func (c *VCPU) FPU() (f FPU, err error) {
	return f, vcpuIoctl(c, ioctlGetFPU, "KVM_GET_FPU", &f)
}

// SetFPU writes the x87 and SSE state with KVM_SET_FPU.
func (c *VCPU) SetFPU(f *FPU) error { return vcpuIoctl(c, ioctlSetFPU, "KVM_SET_FPU", f) }

// XSave reads the x87, SSE and AVX state with KVM_GET_XSAVE (KVM_CAP_XSAVE).
func (c *VCPU) XSave() (x XSave, err error) {
	return x, vcpuIoctl(c, ioctlGetXSave, "KVM_GET_XSAVE", &x)
}

// SetXSave writes it with KVM_SET_XSAVE.
func (c *VCPU) SetXSave(x *XSave) error { return vcpuIoctl(c, ioctlSetXSave, "KVM_SET_XSAVE", x) }

// XCRs reads the extended control registers with KVM_GET_XCRS (KVM_CAP_XCRS).
func (c *VCPU) XCRs() (x XCRs, err error) {
	return x, vcpuIoctl(c, ioctlGetXCRs, "KVM_GET_XCRS", &x)
}

// SetXCRs writes them with KVM_SET_XCRS.
func (c *VCPU) SetXCRs(x *XCRs) error { return vcpuIoctl(c, ioctlSetXCRs, "KVM_SET_XCRS", x) }

// MarkSregsDirty makes the next KVM_RUN load the special registers from
// SyncedSregs, at no extra ioctl.
func (c *VCPU) MarkSregsDirty() { c.run.KVMDirtyRegs |= SyncSpecial }

// SetGuestDebug configures guest debugging (breakpoints, single-step).
func (c *VCPU) SetGuestDebug(d GuestDebug) error {
	return vcpuIoctl(c, ioctlSetGuestDebug, "KVM_SET_GUEST_DEBUG", &d)
}

// EnableSyncRegs makes KVM copy the selected register sets (Sync* bits)
// into kvm_run on every exit; SyncedRegs then reads them without an ioctl.
func (c *VCPU) EnableSyncRegs(bits uint64) { c.run.KVMValidRegs = bits }

// SyncedRegs is the general-register copy KVM wrote at the last exit. After
// modifying it, call MarkRegsDirty so KVM loads it on the next entry.
func (c *VCPU) SyncedRegs() *Regs { return &c.run.Sync.Regs }

// SyncedSregs is the special-register copy of the last exit (read-only use).
func (c *VCPU) SyncedSregs() *Sregs { return &c.run.Sync.Sregs }

// MarkRegsDirty tells KVM to load SyncedRegs on the next entry.
func (c *VCPU) MarkRegsDirty() { c.run.KVMDirtyRegs |= SyncGeneral }

// IO describes the port I/O of an ExitIO.
type IO struct {
	Port  uint16
	Size  int  // 1, 2 or 4 bytes
	Out   bool // guest wrote (OUT) rather than read (IN)
	Count int  // repetitions (string I/O)
	Data  []byte
}

// InternalErr returns the KVM internal-error record of an ExitInternalError.
func (c *VCPU) InternalErr() InternalError { return *exitAs[InternalError](c.run) }

// Debug returns the debug record of an ExitDebug.
func (c *VCPU) Debug() DebugExit { return *exitAs[DebugExit](c.run) }

// FailEntryReason is the hardware reason of an ExitFailEntry.
func (c *VCPU) FailEntryReason() uint64 { return *exitAs[uint64](c.run) }

// MSR describes an ExitX86RDMSR / ExitX86WRMSR.
type MSR struct {
	Index uint32
	Data  uint64 // value written (WRMSR)
}

// MSRExit returns the MSR being accessed.
func (c *VCPU) MSRExit() MSR {
	m := exitAs[msrExit](c.run)
	return MSR{Index: m.Index, Data: m.Data}
}

// CompleteMSR answers an MSR exit: fail injects #GP into the guest; for a
// read, data is the value returned.
func (c *VCPU) CompleteMSR(data uint64, fail bool) {
	m := exitAs[msrExit](c.run)
	m.Data = data
	m.Error = b2u8(fail)
}

func b2u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
