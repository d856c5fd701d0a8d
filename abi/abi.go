// Package abi is the Go side of the guest–VMM contract: guest-physical
// layout, I/O ports, hypercalls and the guest kernel's system calls. It
// mirrors guest/include/reprise/abi.h; abi_test.go parses that header and
// fails if the two disagree.
package abi

// Guest-physical layout. The system area below 2 MiB is mapped with 4 KiB
// pages; the kernel image lives in [KernelBase, UserBase) and user code,
// data and stacks from UserBase to the end of RAM.
const (
	PML4          = 0x1000
	PDPT          = 0x2000
	PD            = 0x3000 // 4 pages: up to 4 GiB of 2 MiB mappings
	PT0           = 0x7000 // 4 KiB mappings of the first 2 MiB
	GDT           = 0x8000
	IDT           = 0x9000
	TSS           = 0xA000
	BootInfo      = 0xD000
	Clock         = 0xE000 // user read-only
	SWBC          = 0xF000 // user read-write
	IST1Top       = 0x14000
	IST2Top       = 0x18000
	BootStackTop  = 0x30000
	ProbeArea     = 0x1F0000 // user read/execute: a replay's out-of-line probe copies
	ProbeAreaSize = 0x10000
	KernelBase    = 0x200000
	UserBase      = 0x400000
	TSSRSP0       = TSS + 4
)

// The register branch counter's countdown region (docs/architecture.md,
// "Position sources"): code built for it keeps a pointer in r15 that every
// counted block moves down one byte and loads through. The region's pages all
// map CounterZero, but its lowest, the guard, maps CounterGuard, where there
// is no RAM: the load that reaches it is an MMIO exit, exactly at the count
// the VMM placed r15 for. The tables alias: every PD slot but the guard's
// names one PT, every PDPT slot but the guard's one PD, so 512 GiB of counts
// cost five pages.
const (
	CounterTables = 0x30000        // 5 pages: PDPT, guard PD, PD, guard PT, PT
	CounterZero   = 0x35000        // read-only zeros: what every count loads
	CounterBase   = 0x80_0000_0000 // guest-virtual, PML4 slot 1: the guard page
	CounterSpan   = 1 << 39        // the region: the guard and 512 GiB less a page of counts
	CounterGuard  = 0x1_0000_0000  // guest-physical, above the largest RAM (4 GiB)
	// CounterGuardTop is the guard page's top byte: r15 there means the
	// count is the one r15 was placed for (struct reprise_swbc.armed).
	CounterGuardTop = CounterBase + 4096 - 1
)

// CountCode is a count of the register counter, as guest/tools/count.awk
// inserts it: lea -1(%r15),%r15; movzbl (%r15),%r14d.
var CountCode = [...]byte{0x4d, 0x8d, 0x7f, 0xff, 0x45, 0x0f, 0xb6, 0x37}

// Segment selectors.
const (
	SelKernelCode = 0x08
	SelKernelData = 0x10
	SelUserData   = 0x1B
	SelUserCode   = 0x23
	SelTSS        = 0x28
)

// Interrupts: line n of the interrupt controller is vector IRQBase+n.
const (
	IRQBase         = 0x20
	IRQTimer        = 0
	IRQSoft         = 1
	IRQDisk         = 2
	IRQNIC          = 3
	IRQSerial       = 4
	VectorStubSize  = 16
	VectorsSymbol   = "reprise_vectors"
	TraceRingSymbol = "reprise_trace_ring"
	// SWBCRegisterSymbol marks an image whose user code counts branches
	// in r15 (the kit's Makefile defines it; its value is unused).
	SWBCRegisterSymbol = "__reprise_swbc_r15"
)

// The kernel's thread table (abi.h), at ThreadsSymbol: MaxThreads entries
// of ThreadSize bytes, slot 0 the idle thread. A thread not running keeps
// its user registers in the Frame its entry's frame pointer points at.
const (
	ThreadsSymbol    = "reprise_threads"
	MaxThreads       = 64
	ThreadSize       = 96
	ThreadFrame      = 32 // struct reprise_frame *frame
	ThreadTID        = 64 // uint32_t tid
	ThreadState      = 68 // uint32_t state
	ThreadRunnable   = 1
	ThreadBlocked    = 2
	CurrentTIDSymbol = "reprise_current_tid"
	// UserStartSymbol is where the first thread's user code begins,
	// ThreadEntrySymbol every other thread's.
	UserStartSymbol   = "reprise_user_start"
	ThreadEntrySymbol = "reprise_thread_entry"
	UserEndSymbol     = "reprise_user_end"
)

// The kernel's trace ring (trace.h): its header, record size and kinds.
const (
	TraceMagic   = 0x3245434152545052 // "RPTRACE2"
	TraceRecSize = 40
	TraceHeadOff = 0x10 // u64 head: records ever written
	TraceHeader  = 0x20 // the records follow the header
	TraceSwitch  = 1    // tid = from, a = to, b = reason
	TraceCreate  = 2    // tid = creator, a = new tid, b = start function
	TraceExit    = 3    // tid = exiting thread, a = exit value
	TraceUser    = 0x10000
)

// I/O ports.
const (
	PortSerial    = 0x3F8
	PortExit      = 0x501
	PortHcall     = 0x510
	PortTimer     = 0x520
	PortIntcMask  = 0x530
	PortIntcRaise = 0x531
	PortEntropy   = 0x540
	PortDisk      = 0x550
	PortDiskCap   = 0x554
	PortNICRXRing = 0x560
	PortNICTXRing = 0x564
	PortNICRXTail = 0x568
	PortNICTXTail = 0x56C
	PortNICInfo   = 0x570
	PortSWBC      = 0xE5
	PortProbe     = 0xE8 // a replay's probe sites patched to exit: `out %al, $0xE8` from CPL3
	// The Linux personality's stubs (package linux, not abi.h): a system
	// call (out from the SYSCALL target, at CPL3 on PVM hosts) and a trap
	// (out from an exception vector).
	PortSyscall = 0xE6
	PortTrap    = 0xE7
	PortNull    = 0x5F0
)

// Hypercall numbers (value written to PortHcall; args in rdi, rsi, r8).
const (
	HcTime       = 1
	HcMark       = 2
	HcFault      = 3
	HcBreakpoint = 4
)

// Guest kernel system calls (ud2 with rax = number).
const (
	SysExit         = 0
	SysWrite        = 1
	SysThreadCreate = 2
	SysThreadExit   = 3
	SysThreadJoin   = 4
	SysYield        = 5
	SysSleepNs      = 6
	SysFutexWait    = 7
	SysFutexWake    = 8
	SysClockNs      = 9
	SysTrace        = 10
	SysGettid       = 11
	SysBench        = 12
	SysGetrandom    = 13
	SysDiskRead     = 14
	SysDiskWrite    = 15
	SysDiskSectors  = 16
	SysNetSetup     = 17
	SysNetRXTail    = 18
	SysNetTXTail    = 19
	SysNetWait      = 20
)

// NIC (struct reprise_nic_desc and the fixed addresses of the user-mode
// network).
const (
	NICRing     = 64
	NICFrameMax = 1514
	NICDone     = 1
	NICDescSize = 16
	NetGuestMAC = 0x525400123456
	NetHostMAC  = 0x525400000002
	NetGuestIP  = 0x0A00020F
	NetHostIP   = 0x0A000202
)

// Disk device (struct reprise_disk_req and its values).
const (
	DiskSector     = 512
	DiskMaxSectors = 256
	DiskRead       = 1
	DiskWrite      = 2
	DiskPending    = 0
	DiskOK         = 1
	DiskError      = 2
	DiskReqSize    = 32
	DiskReqStatus  = 24 // offset of status in the request
	DiskMaxQueued  = 64 // requests in flight; one more is refused at once
)

// SysBench operations.
const (
	BenchMark     = 0 // HC_MARK(n) from the kernel
	BenchExitCPL0 = 1
	BenchNop      = 2
	BenchIRQ      = 3
)

// HC_MARK ids the kit's dispatcher uses around every workload, and how
// many distinct ids the VMM timestamps (the latest mark of each).
const (
	MarkWorkloadStart = 100
	MarkWorkloadEnd   = 101
	MarkMaxIDs        = 64
)

// Boot info (struct reprise_bootinfo).
const (
	BootMagic          = 0x3145534952504552 // "REPRISE1"
	CmdlineMax         = 256
	BootInfoMagicOff   = 0
	BootInfoMemOff     = 8
	BootInfoTimerHzOff = 16
	BootInfoNCPUsOff   = 20
	BootInfoCmdlineOff = 24
)

// Clock page (struct reprise_clock) and swbc page (struct reprise_swbc).
const (
	ClockNsOff    = Clock + 0
	ClockTicksOff = Clock + 8
	SWBCCountOff  = SWBC + 0
	SWBCTargetOff = SWBC + 8
	SWBCArmedOff  = SWBC + 16
)

// FrameSize is sizeof(struct reprise_frame): 15 GPRs, vector, error code,
// and the five words the CPU pushes.
const FrameSize = 22 * 8

// FrameRIP is the offset of rip in struct reprise_frame.
const FrameRIP = 17 * 8

// Frame is struct reprise_frame, the register frame the kernel's vector
// stubs build; HcFault passes its address.
type Frame struct {
	R15, R14, R13, R12, R11, R10, R9, R8 uint64
	RBP, RDI, RSI, RDX, RCX, RBX, RAX    uint64
	Vector, Error                        uint64
	RIP, CS, RFLAGS, RSP, SS             uint64
}
