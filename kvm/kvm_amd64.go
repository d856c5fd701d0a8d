package kvm

// Regs mirrors struct kvm_regs (arch/x86/include/uapi/asm/kvm.h), 144 bytes.
type Regs struct {
	RAX, RBX, RCX, RDX uint64
	RSI, RDI, RSP, RBP uint64
	R8, R9, R10, R11   uint64
	R12, R13, R14, R15 uint64
	RIP, RFLAGS        uint64
}

// Segment mirrors struct kvm_segment, 24 bytes.
type Segment struct {
	Base     uint64
	Limit    uint32
	Selector uint16
	Type     uint8
	Present  uint8
	DPL      uint8
	DB       uint8
	S        uint8
	L        uint8
	G        uint8
	AVL      uint8
	Unusable uint8
	_        uint8
}

// DTable mirrors struct kvm_dtable (GDTR/IDTR), 16 bytes.
type DTable struct {
	Base  uint64
	Limit uint16
	_     [3]uint16
}

// Sregs mirrors struct kvm_sregs, 312 bytes.
type Sregs struct {
	CS, DS, ES, FS, GS, SS Segment
	TR, LDT                Segment
	GDT, IDT               DTable
	CR0, CR2, CR3, CR4     uint64
	CR8                    uint64
	EFER                   uint64
	APICBase               uint64
	InterruptBitmap        [4]uint64
}

// VCPUEvents mirrors struct kvm_vcpu_events, 64 bytes. Only the parts the
// VMM reads are named; the rest is kept opaque.
type VCPUEvents struct {
	Exception struct {
		Injected, Nr, HasErrorCode, Pending uint8
		ErrorCode                           uint32
	}
	Interrupt struct {
		Injected, Nr, Soft, Shadow uint8
	}
	NMI struct {
		Injected, Pending, Masked, _ uint8
	}
	SIPIVector uint32
	Flags      uint32
	_          [40]byte // smi, triple_fault, reserved[26], exception_has_payload, exception_payload
}

// syncRegs mirrors struct kvm_sync_regs: the register state KVM copies into
// kvm_run on every exit when KVM_CAP_SYNC_REGS is enabled, saving an ioctl.
type syncRegs struct {
	Regs   Regs
	Sregs  Sregs
	Events VCPUEvents
}

// CPUIDEntry mirrors struct kvm_cpuid_entry2, 40 bytes.
type CPUIDEntry struct {
	Function uint32
	Index    uint32
	Flags    uint32
	EAX      uint32
	EBX      uint32
	ECX      uint32
	EDX      uint32
	_        [3]uint32
}

// cpuidHeader mirrors the fixed part of struct kvm_cpuid2; entries follow it.
type cpuidHeader struct {
	Nent uint32
	_    uint32
}

// userspaceMemoryRegion mirrors struct kvm_userspace_memory_region, 32 bytes.
type userspaceMemoryRegion struct {
	Slot          uint32
	Flags         uint32
	GuestPhysAddr uint64
	MemorySize    uint64
	UserspaceAddr uint64
}

// dirtyLog mirrors struct kvm_dirty_log, 16 bytes.
type dirtyLog struct {
	Slot   uint32
	_      uint32
	Bitmap uint64 // userspace address of the bitmap
}

// interrupt mirrors struct kvm_interrupt.
type interrupt struct {
	IRQ uint32
}

// GuestDebug mirrors struct kvm_guest_debug, 72 bytes.
type GuestDebug struct {
	Control  uint32
	_        uint32
	DebugReg [8]uint64
}

// enableCap mirrors struct kvm_enable_cap, 104 bytes.
type enableCap struct {
	Cap   uint32
	Flags uint32
	Args  [4]uint64
	_     [64]uint8
}

// msrFilterRange mirrors struct kvm_msr_filter_range, 24 bytes.
type msrFilterRange struct {
	Flags  uint32
	NMSRs  uint32
	Base   uint32
	_      uint32
	Bitmap uint64 // userspace address
}

// msrFilter mirrors struct kvm_msr_filter, 392 bytes.
type msrFilter struct {
	Flags  uint32
	_      uint32
	Ranges [msrFilterMaxRanges]msrFilterRange
}

// runHeader mirrors the fixed head of struct kvm_run (up to the exit union).
type runHeader struct {
	RequestInterruptWindow     uint8
	ImmediateExit              uint8
	_                          [6]uint8
	ExitReason                 ExitReason
	ReadyForInterruptInjection uint8
	IFFlag                     uint8
	Flags                      uint16
	CR8                        uint64
	APICBase                   uint64
}

// run mirrors struct kvm_run up to the sync-register area (the part of the
// mmap'd page this package touches).
type run struct {
	runHeader
	Exit         [256]byte // union of the per-exit-reason structs
	KVMValidRegs uint64
	KVMDirtyRegs uint64
	Sync         syncRegs
}

// Exit-union layouts (members of the union at kvm_run+32).

// ioExit mirrors kvm_run.io.
type ioExit struct {
	Direction  uint8
	Size       uint8
	Port       uint16
	Count      uint32
	DataOffset uint64
}

// mmioExit mirrors kvm_run.mmio.
type mmioExit struct {
	PhysAddr uint64
	Data     [8]uint8
	Len      uint32
	IsWrite  uint8
}

// msrExit mirrors kvm_run.msr.
type msrExit struct {
	Error  uint8
	_      [7]uint8
	Reason uint32
	Index  uint32
	Data   uint64
}

// DebugExit mirrors struct kvm_debug_exit_arch (kvm_run.debug.arch).
type DebugExit struct {
	Exception uint32
	_         uint32
	PC        uint64
	DR6       uint64
	DR7       uint64
}

// InternalError mirrors kvm_run.internal.
type InternalError struct {
	Suberror uint32
	NData    uint32
	Data     [16]uint64
}

// MSREntry mirrors struct kvm_msr_entry, 16 bytes.
type MSREntry struct {
	Index uint32
	_     uint32
	Data  uint64
}

// maxMSRs bounds one KVM_GET_MSRS / KVM_SET_MSRS call.
const maxMSRs = 8

// msrs mirrors struct kvm_msrs (an 8-byte header) with room for maxMSRs
// entries after it.
type msrs struct {
	N       uint32
	_       uint32
	Entries [maxMSRs]MSREntry
}

// XSave mirrors struct kvm_xsave in its 4 KiB form: the XSAVE image of
// the x87, SSE and AVX state (KVM_FPU has no AVX upper halves).
type XSave struct{ Region [1024]uint32 }

// XCRs mirrors struct kvm_xcrs, 392 bytes: the extended control
// registers (XCR0: which state components XSAVE covers).
type XCRs struct {
	N       uint32
	Flags   uint32
	XCRs    [16]XCR
	Padding [16]uint64
}

// XCR is one extended control register.
type XCR struct {
	Index    uint32
	Reserved uint32
	Value    uint64
}

// FPU mirrors struct kvm_fpu, 416 bytes: the x87 and SSE state in FXSAVE
// form.
type FPU struct {
	FPR        [8][16]uint8
	FCW        uint16
	FSW        uint16
	FTWX       uint8
	_          uint8
	LastOpcode uint16
	LastIP     uint64
	LastDP     uint64
	XMM        [16][16]uint8
	MXCSR      uint32
	_          uint32
}
