package mm

import (
	"maps"
	"slices"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/memory"
)

// Space is a process's virtual memory: the page tables the guest CPU
// walks, which the VMM alone writes (tables.go), the ranges mapped in them
// (mmap.go), the frames a fork shares until written (cow.go) and the file
// mappings (mapping.go). Every accessible page has a frame from the moment
// it is mapped, but a lazy range's, which get theirs when touched
// (lazy.go).
type Space struct {
	ram    *memory.RAM
	fr     *Frames
	root   uint64          // the PML4 in (or bound for) CR3
	fresh  map[uint64]bool // table frames the guest has not run on yet
	pages  map[uint64]uint64
	vmas   Ranges[VMA]
	tables []uint64 // every table frame in use, the root included
	// sites are the instructions the kernel patched in this address
	// space (RDTSCs and RDTSCPs), each with its length.
	sites map[uint64]uint8
	// cow are the writable pages whose frame a fork shares: mapped
	// read-only until a write copies the frame (breakCOW).
	cow map[uint64]bool
	// files are the file mappings.
	files Ranges[Mapping]
	// callPage says the call page is open to the program (OpenCallPage).
	callPage bool
}

// New is an address space with nothing mapped but the system area, its
// tables taken from fr.
func New(fr *Frames) (*Space, error) {
	as := &Space{ram: fr.ram, fr: fr, fresh: map[uint64]bool{}, pages: map[uint64]uint64{}, sites: map[uint64]uint8{}, cow: map[uint64]bool{}}
	root, err := as.newTable()
	if err != nil {
		return nil, err
	}
	as.root = root
	// The system area, identity-mapped for the CPU's own accesses
	// (descriptor tables, TSS, exception stacks), and the stub page,
	// which CPL3 code executes.
	for va := uint64(PageSize); va < SystemTop; va += PageSize {
		flags := uint64(ptePresent | pteWrite | pteAccessed | pteDirty)
		switch va {
		case StubPage:
			flags = ptePresent | pteUser | pteAccessed
		case abi.SWBC: // an instrumented program's branch counter
			flags = ptePresent | pteWrite | pteUser | pteAccessed | pteDirty
		}
		if err := as.setPTE(va, va|flags); err != nil {
			return nil, err
		}
	}
	return as, nil
}

// OpenCallPage lets the program's code write the call page, where the
// SYSCALL stub posts exception-less calls (package linux, fastcall.go);
// the address space's forks' have it open too.
func (as *Space) OpenCallPage() error {
	as.callPage = true
	return as.setPTE(CallPage, CallPage|ptePresent|pteWrite|pteUser|pteAccessed|pteDirty)
}

// Frame is the frame backing the page at va, if it is mapped.
func (as *Space) Frame(va uint64) (pa uint64, ok bool) {
	pa, ok = as.pages[va]
	return pa, ok
}

// COW reports whether the page at va is copy-on-write.
func (as *Space) COW(va uint64) bool { return as.cow[va] }

// Site is the length of the instruction the kernel patched at va, 0 if
// none.
func (as *Space) Site(va uint64) uint8 { return as.sites[va] }

// AddSite records that the kernel patched an instruction of n bytes at
// va.
func (as *Space) AddSite(va uint64, n uint8) { as.sites[va] = n }

// Release frees every frame of the address space: its pages, and its
// tables (retire). Nothing of it is kept but its root's address: a
// zombie's, or an image's replaced by exec.
func (as *Space) Release() {
	as.dropPages(as.pageAddrs(), as.objectPages(0, MaxUserAddr))
	for _, pa := range as.tables {
		if as.fresh[pa] {
			as.fr.release(pa)
		} else {
			as.fr.retire(pa)
		}
	}
	as.pages, as.vmas, as.tables = nil, Ranges[VMA]{}, nil
	as.files, as.fresh, as.sites, as.cow = Ranges[Mapping]{}, map[uint64]bool{}, map[uint64]uint8{}, map[uint64]bool{}
}

// pageAddrs are the mapped pages' addresses in order: frames are taken
// and given back in this order, so where each page lands is the same in
// every replay (a map's order is not).
func (as *Space) pageAddrs() []uint64 { return slices.Sorted(maps.Keys(as.pages)) }

// Resident counts the pages that have frames (/proc/PID/statm), and the
// shared mappings' among them.
func (as *Space) Resident() (pages, shared int) {
	for _, v := range as.vmas.list {
		if v.Obj != nil {
			shared += len(as.present(v.Start, v.End))
		}
	}
	return len(as.pages), shared
}
