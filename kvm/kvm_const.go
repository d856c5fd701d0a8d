package kvm

import "strconv"

// ioctl numbers, from <linux/kvm.h> (KVMIO = 0xAE). The sizes encoded in the
// _IOW/_IOR numbers are checked against the Go structs in kvm_test.go.
const (
	ioctlGetAPIVersion       = 0xae00
	ioctlCreateVM            = 0xae01
	ioctlCheckExtension      = 0xae03
	ioctlGetVCPUMmapSize     = 0xae04
	ioctlGetSupportedCPUID   = 0xc008ae05
	ioctlCreateVCPU          = 0xae41
	ioctlGetDirtyLog         = 0x4010ae42
	ioctlSetUserMemoryRegion = 0x4020ae46
	ioctlSetTSSAddr          = 0xae47
	ioctlRun                 = 0xae80
	ioctlGetRegs             = 0x8090ae81
	ioctlSetRegs             = 0x4090ae82
	ioctlGetSregs            = 0x8138ae83
	ioctlSetSregs            = 0x4138ae84
	ioctlInterrupt           = 0x4004ae86
	ioctlGetMSRs             = 0xc008ae88
	ioctlSetMSRs             = 0x4008ae89
	ioctlGetFPU              = 0x81a0ae8c
	ioctlSetFPU              = 0x41a0ae8d
	ioctlSetCPUID2           = 0x4008ae90
	ioctlGetVCPUEvents       = 0x8040ae9f
	ioctlSetVCPUEvents       = 0x4040aea0
	ioctlSetGuestDebug       = 0x4048ae9b
	ioctlEnableCap           = 0x4068aea3
	ioctlGetXSave            = 0x9000aea4
	ioctlSetXSave            = 0x5000aea5
	ioctlGetXCRs             = 0x8188aea6
	ioctlSetXCRs             = 0x4188aea7
	ioctlX86SetMSRFilter     = 0x4188aec6
)

// APIVersion is the only KVM API version there has ever been.
const APIVersion = 12

// Cap is a KVM capability number (KVM_CAP_*).
type Cap uint32

const (
	CapIRQChip         Cap = 0
	CapHLT             Cap = 1
	CapUserMemory      Cap = 3
	CapExtCPUID        Cap = 7
	CapNrMemslots      Cap = 10
	CapSetGuestDebug   Cap = 23
	CapXSave           Cap = 55
	CapXCRs            Cap = 56
	CapSyncRegs        Cap = 74
	CapImmediateExit   Cap = 136
	CapX86UserSpaceMSR Cap = 188
	CapX86MSRFilter    Cap = 189
)

var capNames = map[Cap]string{
	CapIRQChip: "KVM_CAP_IRQCHIP", CapHLT: "KVM_CAP_HLT", CapUserMemory: "KVM_CAP_USER_MEMORY",
	CapExtCPUID: "KVM_CAP_EXT_CPUID", CapNrMemslots: "KVM_CAP_NR_MEMSLOTS",
	CapSetGuestDebug: "KVM_CAP_SET_GUEST_DEBUG", CapXSave: "KVM_CAP_XSAVE", CapXCRs: "KVM_CAP_XCRS", CapSyncRegs: "KVM_CAP_SYNC_REGS",
	CapImmediateExit: "KVM_CAP_IMMEDIATE_EXIT", CapX86UserSpaceMSR: "KVM_CAP_X86_USER_SPACE_MSR",
	CapX86MSRFilter: "KVM_CAP_X86_MSR_FILTER",
}

func (c Cap) String() string { return constName(capNames, c, "KVM_CAP_") }

// constName names a KVM constant, or gives its number after prefix.
func constName[K ~uint32](names map[K]string, k K, prefix string) string {
	if n, ok := names[k]; ok {
		return n
	}
	return prefix + strconv.FormatUint(uint64(k), 10)
}

// ExitReason is kvm_run.exit_reason (KVM_EXIT_*).
type ExitReason uint32

const (
	ExitUnknown       ExitReason = 0
	ExitException     ExitReason = 1
	ExitIO            ExitReason = 2
	ExitHypercall     ExitReason = 3
	ExitDebug         ExitReason = 4
	ExitHLT           ExitReason = 5
	ExitMMIO          ExitReason = 6
	ExitIRQWindowOpen ExitReason = 7
	ExitShutdown      ExitReason = 8
	ExitFailEntry     ExitReason = 9
	ExitIntr          ExitReason = 10
	ExitNMI           ExitReason = 16
	ExitInternalError ExitReason = 17
	ExitSystemEvent   ExitReason = 24
	ExitX86RDMSR      ExitReason = 29
	ExitX86WRMSR      ExitReason = 30
)

var exitNames = map[ExitReason]string{
	ExitUnknown: "UNKNOWN", ExitException: "EXCEPTION", ExitIO: "IO", ExitHypercall: "HYPERCALL",
	ExitDebug: "DEBUG", ExitHLT: "HLT", ExitMMIO: "MMIO", ExitIRQWindowOpen: "IRQ_WINDOW_OPEN",
	ExitShutdown: "SHUTDOWN", ExitFailEntry: "FAIL_ENTRY", ExitIntr: "INTR", ExitNMI: "NMI",
	ExitInternalError: "INTERNAL_ERROR", ExitSystemEvent: "SYSTEM_EVENT",
	ExitX86RDMSR: "X86_RDMSR", ExitX86WRMSR: "X86_WRMSR",
}

func (r ExitReason) String() string { return constName(exitNames, r, "EXIT_") }

// I/O exit directions (kvm_run.io.direction).
const (
	IOIn  = 0
	IOOut = 1
)

// kvm_run.kvm_valid_regs / kvm_dirty_regs bits.
const (
	SyncGeneral = 1 << 0 // struct kvm_regs
	SyncSpecial = 1 << 1 // struct kvm_sregs
	SyncEvents  = 1 << 2 // struct kvm_vcpu_events
)

// Guest debug control bits (kvm_guest_debug.control).
const (
	GuestDebugEnable     = 0x00000001
	GuestDebugSingleStep = 0x00000002
	GuestDebugUseSWBP    = 0x00010000
	GuestDebugUseHWBP    = 0x00020000
)

// MSR filtering (KVM_X86_SET_MSR_FILTER, KVM_CAP_X86_USER_SPACE_MSR).
const (
	MSRFilterDefaultAllow = 0
	MSRFilterDefaultDeny  = 1
	MSRExitReasonFilter   = 1 << 2
	msrFilterRead         = 1 << 0
	msrFilterWrite        = 1 << 1
	msrFilterMaxRanges    = 16
)

// Memory region flags (kvm_userspace_memory_region.flags).
const (
	MemLogDirtyPages = 1 << 0
	MemReadonly      = 1 << 1
)

// Model-specific registers the VMM sets for a guest whose system calls it
// serves (SYSCALL/SYSRET and the thread pointer).
const (
	MSREFER         = 0xc0000080
	MSRSTAR         = 0xc0000081
	MSRLSTAR        = 0xc0000082
	MSRSFMASK       = 0xc0000084
	MSRFSBase       = 0xc0000100
	MSRKernelGSBase = 0xc0000102
)
