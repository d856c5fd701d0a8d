package linux

// Guest layout. Physical memory below 2 MiB is the VMM's system area (the
// descriptor tables and stacks package x86 builds at abi's addresses, and
// the stub page); it is mapped at the same virtual addresses in every
// address space, supervisor-only but for the stub page, so a program
// cannot map anything below 2 MiB — Linux's mmap_min_addr, larger.
// Every other frame of RAM is the frame allocator's.
const (
	pageSize = 4096
	pageMask = pageSize - 1

	systemTop = 0x200000 // [pageSize, systemTop): the system area
	// debugIST is the IST slot of the stack #BP and #DB use, which no
	// other exception uses: [abi.IST1Top, abi.IST2Top).
	debugIST    = 2
	vectorsPage = 0x1E0000 // physical = virtual: the exception stubs (supervisor)
	stubPage    = 0x1E1000 // physical = virtual: the SYSCALL stub (user)
	firstFree   = systemTop

	// Virtual addresses of a process (those of Linux without ASLR).
	userTop     = 0x7ffffffff000 // the stack's top
	stackSize   = 8 << 20        // mapped up front: there is no demand paging
	mmapTop     = 0x7ffff7fff000 // mmap hands out addresses downwards from here
	pieBase     = 0x555555554000 // where a position-independent executable is loaded
	maxUserAddr = userTop
	minUserAddr = systemTop
	randomBytes = 16 // AT_RANDOM
)

// DefaultMemBytes is the guest RAM a Linux program gets unless asked: real
// programs need more than a kit workload, and every page they map is
// backed at once.
const DefaultMemBytes = 256 << 20
