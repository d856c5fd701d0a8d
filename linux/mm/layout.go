package mm

// Guest layout. Physical memory below 2 MiB is the VMM's system area (the
// descriptor tables and stacks package x86 builds at abi's addresses, and
// the stub page); it is mapped at the same virtual addresses in every
// address space, supervisor-only but for the stub page, so a program
// cannot map anything below 2 MiB — Linux's mmap_min_addr, larger.
// Every other frame of RAM is the frame allocator's.
const (
	PageSize = 4096
	PageMask = PageSize - 1

	SystemTop = 0x200000 // [PageSize, SystemTop): the system area
	StubPage  = 0x1E1000 // physical = virtual: the SYSCALL stub (user)
	CallPage  = 0x1E2000 // physical = virtual: exception-less calls' page (user read-write when open)
	FirstFree = SystemTop

	// Virtual addresses of a process (those of Linux without ASLR).
	MaxUserAddr = 0x7ffffffff000 // the stack's top
	MinUserAddr = SystemTop
	MmapTop     = 0x7ffff7fff000 // mmap hands out addresses downwards from here
)

// Page-table entry bits (Intel SDM vol. 3, 4.5). vmm/x86 has the same for
// the boot tables; mm keeps its own so that it needs no machine.
const (
	ptePresent  = 1 << 0
	pteWrite    = 1 << 1
	pteUser     = 1 << 2
	pteAccessed = 1 << 5
	pteDirty    = 1 << 6
)
