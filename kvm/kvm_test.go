package kvm_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/internal/kvmtest"
	"github.com/reprise-vm/reprise/kvm"
)

func TestCapString(t *testing.T) {
	for _, tc := range []struct {
		c    kvm.Cap
		want string
	}{
		{kvm.CapIRQChip, "KVM_CAP_IRQCHIP"},
		{kvm.CapUserMemory, "KVM_CAP_USER_MEMORY"},
		{kvm.CapSyncRegs, "KVM_CAP_SYNC_REGS"},
		{kvm.CapImmediateExit, "KVM_CAP_IMMEDIATE_EXIT"},
		{kvm.CapX86UserSpaceMSR, "KVM_CAP_X86_USER_SPACE_MSR"},
		{kvm.CapX86MSRFilter, "KVM_CAP_X86_MSR_FILTER"},
		{kvm.Cap(9999), "KVM_CAP_9999"},
	} {
		require.Equal(t, tc.want, tc.c.String())
	}
}

func TestExitReasonString(t *testing.T) {
	for _, tc := range []struct {
		r    kvm.ExitReason
		want string
	}{
		{kvm.ExitUnknown, "UNKNOWN"},
		{kvm.ExitIO, "IO"},
		{kvm.ExitHLT, "HLT"},
		{kvm.ExitShutdown, "SHUTDOWN"},
		{kvm.ExitInternalError, "INTERNAL_ERROR"},
		{kvm.ExitX86RDMSR, "X86_RDMSR"},
		{kvm.ExitX86WRMSR, "X86_WRMSR"},
		{kvm.ExitReason(77), "EXIT_77"},
	} {
		require.Equal(t, tc.want, tc.r.String())
	}
}

func TestMissingCapErrorNamesCap(t *testing.T) {
	err := &kvm.MissingCapError{Cap: kvm.CapSyncRegs, Why: "fast registers"}
	require.Contains(t, err.Error(), "KVM_CAP_SYNC_REGS")
	require.Contains(t, err.Error(), "fast registers")
}

func TestOpenNonexistent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-kvm-here")
	_, err := kvm.Open(path)
	require.ErrorIs(t, err, kvm.ErrNoDevice)
	require.ErrorIs(t, kvm.Usable(path), kvm.ErrNoDevice)
}

func TestOpenNotKVM(t *testing.T) {
	// /dev/null opens but answers no KVM ioctl: Open must fail, not succeed.
	_, err := kvm.Open("/dev/null")
	require.Error(t, err)
	require.NotErrorIs(t, err, kvm.ErrNoDevice)
}

// TestVMLifecycle exercises each ioctl wrapper once against the real device.
func TestVMLifecycle(t *testing.T) {
	kvmtest.Require(t)
	sys, err := kvm.Open(kvm.DevicePath)
	require.NoError(t, err)
	defer sys.Close()

	n, err := sys.CheckExtension(kvm.CapUserMemory)
	require.NoError(t, err)
	require.NotZero(t, n)

	cpuid, err := sys.SupportedCPUID()
	require.NoError(t, err)
	require.NotEmpty(t, cpuid)
	var leaf0 *kvm.CPUIDEntry
	for i := range cpuid {
		if cpuid[i].Function == 0 {
			leaf0 = &cpuid[i]
		}
	}
	require.NotNil(t, leaf0, "supported CPUID has no leaf 0")
	require.NotZero(t, leaf0.EAX, "leaf 0 reports the highest basic leaf")

	vm, err := sys.CreateVM()
	require.NoError(t, err)
	defer vm.Close()

	const slotBytes = 2 << 20
	mem, err := unix.Mmap(-1, 0, slotBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	defer unix.Munmap(mem)
	require.NoError(t, vm.SetMemoryRegion(0, kvm.MemLogDirtyPages, 0, mem))

	// One bit per 4 KiB page; nothing has run, so nothing is dirty.
	bitmap := make([]uint64, slotBytes/4096/64)
	for i := range bitmap {
		bitmap[i] = ^uint64(0)
	}
	require.NoError(t, vm.DirtyLog(0, bitmap))
	require.Equal(t, make([]uint64, len(bitmap)), bitmap)
	require.Error(t, vm.DirtyLog(5, bitmap), "slot 5 was never registered")

	err = vm.DenyGuestMSRs()
	var missing *kvm.MissingCapError
	if !errors.As(err, &missing) {
		require.NoError(t, err)
	}

	vcpu, err := vm.CreateVCPU(0)
	require.NoError(t, err)
	defer vcpu.Close()
	require.Equal(t, 0, vcpu.ID())
	_, err = vm.CreateVCPU(0)
	require.Error(t, err, "vCPU id 0 exists already")

	require.NoError(t, vcpu.SetCPUID(cpuid))

	sregs, err := vcpu.Sregs()
	require.NoError(t, err)
	require.Equal(t, uint16(0xf000), sregs.CS.Selector, "reset state: CS selector")
	require.Equal(t, uint64(0xffff0000), sregs.CS.Base, "reset state: CS base")
	require.NoError(t, vcpu.SetSregs(sregs))

	regs := kvm.Regs{RAX: 1, R15: 0xfeed, RIP: 0x1000, RSP: 0x8000, RFLAGS: 2}
	require.NoError(t, vcpu.SetRegs(regs))
	got, err := vcpu.Regs()
	require.NoError(t, err)
	require.Equal(t, regs, got)

	require.NoError(t, vcpu.SetGuestDebug(kvm.GuestDebug{Control: kvm.GuestDebugEnable}))
	require.NoError(t, vcpu.SetGuestDebug(kvm.GuestDebug{}))
}

// A CPUID table of the wrong size is refused with an error, never a panic:
// tables arrive from tapes.
func TestSetCPUIDSizes(t *testing.T) {
	kvmtest.Require(t)
	sys, err := kvm.Open(kvm.DevicePath)
	require.NoError(t, err)
	defer sys.Close()
	vm, err := sys.CreateVM()
	require.NoError(t, err)
	defer vm.Close()
	cpu, err := vm.CreateVCPU(0)
	require.NoError(t, err)
	defer cpu.Close()
	for _, n := range []int{0, kvm.MaxCPUIDEntries + 1} {
		require.ErrorContains(t, cpu.SetCPUID(make([]kvm.CPUIDEntry, n)), "want 1 to 256", "%d entries", n)
	}
	host, err := sys.SupportedCPUID()
	require.NoError(t, err)
	require.NoError(t, cpu.SetCPUID(host))
}
