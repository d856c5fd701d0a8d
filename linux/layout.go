package linux

import "github.com/reprise-vm/reprise/linux/mm"

// Guest layout. Physical memory below 2 MiB is the VMM's system area (the
// descriptor tables and stacks package x86 builds at abi's addresses, and
// the stub page); it is mapped at the same virtual addresses in every
// address space, supervisor-only but for the stub page, so a program
// cannot map anything below 2 MiB — Linux's mmap_min_addr, larger.
// Every other frame of RAM is the frame allocator's.
const (
	pageSize = mm.PageSize
	pageMask = mm.PageMask

	systemTop = mm.SystemTop // [pageSize, systemTop): the system area
	// debugIST is the IST slot of the stack #BP and #DB use, which no
	// other exception uses: [abi.IST1Top, abi.IST2Top).
	debugIST    = 2
	vectorsPage = 0x1E0000    // physical = virtual: the exception stubs (supervisor)
	stubPage    = mm.StubPage // physical = virtual: the SYSCALL stub (user)
	firstFree   = mm.FirstFree

	// Virtual addresses of a process (those of Linux without ASLR).
	userTop     = mm.MaxUserAddr // the stack's top
	stackSize   = 8 << 20        // its pages get frames as they are touched (mm.MapLazy)
	mmapTop     = mm.MmapTop     // mmap hands out addresses downwards from here
	pieBase     = 0x555555554000 // where a position-independent executable is loaded
	maxUserAddr = mm.MaxUserAddr
	minUserAddr = mm.MinUserAddr
	randomBytes = 16 // AT_RANDOM
)

// DefaultMemBytes is the guest RAM a Linux program gets unless asked: real
// programs need more than a kit workload, and every page they map is
// backed at once.
const DefaultMemBytes = 256 << 20
