package mm

import (
	"fmt"
	"slices"

	"github.com/reprise-vm/reprise/vmm/memory"
)

// Frames hands out the 4 KiB frames of guest RAM above the system area,
// zeroed; the last freed is reused first. Which frame backs which page is
// decided by the program's system calls alone, so a replay gets the same
// frames as its recording.
//
// A page table the guest has walked is shadowed by KVM on PVM hosts
// (Space says why that matters), and the shadow outlives the table:
// written from the host as anything else, that frame would be walked
// through the stale shadow if it became a table again. So a replaced
// table's frame waits in retired until KVM has dropped every shadow
// (Machine.DropTranslations: at a fork, or when enough wait here); then it
// is free. A free frame has not been a table since the last drop, so it
// may become one, or a page.
type Frames struct {
	ram  *memory.RAM
	next uint64   // frames from here up have never been used
	free []uint64 // freed frames, a stack
	// retired are frames that were page tables since KVM last dropped
	// its shadows, in the order they were given back; the first settled
	// of them were before the guest last ran. Only those are freed at a
	// drop: a table replaced since may still be on the path of the CR3
	// the vCPU holds, which changes only when the guest next enters.
	retired []uint64
	settled int
	// forget makes KVM drop every shadow of the guest's tables
	// (Machine.DropTranslations); nil, retired frames stay retired.
	forget func() error
	// shared counts the holders of frames that more than one address
	// space maps (copy-on-write after a fork); a frame absent has one.
	shared map[uint64]int
	// patched holds, by frame, the bytes int3s replaced, by offset
	// (patch.go); shown, that RAM holds those bytes, not the int3s, until
	// ShowPatches.
	patched map[uint64]map[uint16]patchedByte
	shown   bool
	// objects are the live shared objects by ID (shared.go), each holding
	// its frames once; lastObject is the last ID given.
	objects    map[int]*Object
	lastObject int
	policy     Policy
}

// Policy is how the spaces of a Frames make entries and forks: choices
// that leave the same program's memory otherwise (other frames, other
// entry bits), so a replay makes the recording's. The zero Policy is
// personality 11's.
type Policy struct {
	// PresetAccessed makes every leaf entry carry the accessed bit, and
	// the dirty bit if writable, as if the program had touched the page
	// already. Nothing reads those bits, but a shadowing KVM must
	// otherwise fault on a page's first access to set them in the
	// guest's entry, and on its first write again if a read came first;
	// and it prefetches a faulting entry's neighbours only if they are
	// marked accessed.
	PresetAccessed bool
	// CopyAtFork is how many writable private pages a fork copies at
	// once rather than share copy-on-write (while RAM allows:
	// copiesAtFork): each copy costs a microsecond or two, each
	// copy-on-write fault an exit (tens of microseconds on PVM hosts),
	// and the parent's entries, left unchanged, keep KVM's shadows of
	// them (no DropTranslations).
	CopyAtFork int
	// WidenInPlace writes an entry that only widens the one it replaces
	// (widens: a page mapped where none was, more rights to the same
	// frame) in place, as a lazy page's first touch does, rather than
	// copying its tables up to a new root: a shadowing KVM keeps its
	// shadows of the tables it would have replaced, which every page the
	// program touched since would otherwise fault in again — a heap grown
	// by brk, a library mapped by the dynamic loader.
	WidenInPlace bool
}

// SetPolicy sets the policy of the entries and forks made from now on.
func (f *Frames) SetPolicy(p Policy) { f.policy = p }

// copiesAtFork reports whether a fork copies n writable private pages
// at once: at most CopyAtFork, and only while frames in use stay within
// a quarter of RAM with the copies. A copy holds memory copy-on-write
// would not, and a program forking many children (a server's workers)
// must not run out of RAM where it would not under Linux: past that
// quarter its forks share copy-on-write.
func (f *Frames) copiesAtFork(n int) bool {
	return n <= f.policy.CopyAtFork && f.InUse()+uint64(n)*PageSize <= f.ram.Size()/4
}

// reclaimAt is how many retired frames make the allocator have KVM drop
// its shadows rather than take a frame never used: a drop costs the guest
// its shadows (rebuilt as it runs), never taking them back would cost the
// host all of guest RAM and then the program its memory.
const reclaimAt = 1024

// NewFrames is the allocator of ram's frames above the system area;
// forget makes KVM drop its shadow page tables (nil: never).
func NewFrames(ram *memory.RAM, forget func() error) *Frames {
	return &Frames{ram: ram, next: FirstFree, forget: forget, shared: map[uint64]int{},
		patched: map[uint64]map[uint16]patchedByte{}, objects: map[int]*Object{}}
}

// share adds a holder to frame pa.
func (f *Frames) share(pa uint64) {
	if n, ok := f.shared[pa]; ok {
		f.shared[pa] = n + 1
		return
	}
	f.shared[pa] = 2
}

// holders is how many address spaces map frame pa.
func (f *Frames) holders(pa uint64) int {
	if n, ok := f.shared[pa]; ok {
		return n
	}
	return 1
}

// drop takes a holder from frame pa, freeing it with the last.
func (f *Frames) drop(pa uint64) {
	switch n := f.holders(pa); {
	case n > 2:
		f.shared[pa] = n - 1
	case n == 2:
		delete(f.shared, pa)
	default:
		f.release(pa)
	}
}

// alloc is a zeroed frame, for a page or a page table.
func (f *Frames) alloc() (uint64, error) {
	if len(f.free) == 0 && f.forget != nil && (f.settled >= reclaimAt || f.next+PageSize > f.ram.Size() && f.settled > 0) {
		if err := f.forget(); err != nil {
			return 0, fmt.Errorf("mm: dropping KVM's shadow page tables: %w", err)
		}
		f.Forgotten()
	}
	if n := len(f.free); n > 0 {
		pa := f.free[n-1]
		f.free = f.free[:n-1]
		b, err := f.ram.Slice(pa, PageSize)
		if err != nil {
			return 0, err
		}
		clear(b)
		return pa, nil
	}
	if f.next+PageSize > f.ram.Size() {
		return 0, ErrNoMemory
	}
	pa := f.next
	f.next += PageSize
	f.ram.Reach(f.next) // the program may write it before the VMM does
	return pa, nil
}

// Forgotten frees the settled retired frames: KVM has just dropped its
// shadows.
func (f *Frames) Forgotten() {
	f.free = append(f.free, f.retired[:f.settled]...)
	f.retired = slices.Clone(f.retired[f.settled:])
	f.settled = 0
}

// Ran notes that the guest is about to run on the tables of the current
// address space: every table retired so far is on no path it walks.
func (f *Frames) Ran() { f.settled = len(f.retired) }

// release frees a frame that held a page.
func (f *Frames) release(pa uint64) {
	_ = f.unpatchFrame(pa) // a freed frame is RAM the end hashes
	f.free = append(f.free, pa)
}

// retire takes back a frame that held a page table the guest may have
// walked: free once KVM has dropped its shadows.
func (f *Frames) retire(pa uint64) { f.retired = append(f.retired, pa) }

// available is how many frames can still be handed out.
func (f *Frames) available() uint64 {
	n := (f.ram.Size()-f.next)/PageSize + uint64(len(f.free))
	if f.forget != nil {
		n += uint64(f.settled)
	}
	return n
}

// InUse is how many bytes of frames are handed out.
func (f *Frames) InUse() uint64 {
	return f.next - FirstFree - uint64(len(f.free)+len(f.retired))*PageSize
}
