package linux

import (
	"fmt"
	"maps"
	"slices"

	"github.com/reprise-vm/reprise/vmm/memory"
)

// frames hands out the 4 KiB frames of guest RAM above the system area,
// zeroed; the last freed is reused first. Which frame backs which page is
// decided by the program's system calls alone, so a replay gets the same
// frames as its recording.
//
// A page table the guest has walked is shadowed by KVM on PVM hosts
// (addressSpace says why that matters), and the shadow outlives the
// table: written from the host as anything else, that frame would be
// walked through the stale shadow if it became a table again. So a
// replaced table's frame waits in retired until KVM has dropped every
// shadow (Machine.DropTranslations: at a fork, or when enough wait here);
// then it is free. A free frame has not been a table since the last drop,
// so it may become one, or a page.
type frames struct {
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
	// patched holds, by frame, the bytes int3s replaced, by offset.
	patched map[uint64]map[uint16]patchedByte
}

// reclaimAt is how many retired frames make the allocator have KVM drop
// its shadows rather than take a frame never used: a drop costs the guest
// its shadows (rebuilt as it runs), never taking them back would cost the
// host all of guest RAM and then the program its memory.
const reclaimAt = 1024

func newFrames(ram *memory.RAM, forget func() error) *frames {
	return &frames{ram: ram, next: firstFree, forget: forget, shared: map[uint64]int{}, patched: map[uint64]map[uint16]patchedByte{}}
}

// share adds a holder to frame pa.
func (f *frames) share(pa uint64) {
	if n, ok := f.shared[pa]; ok {
		f.shared[pa] = n + 1
		return
	}
	f.shared[pa] = 2
}

// holders is how many address spaces map frame pa.
func (f *frames) holders(pa uint64) int {
	if n, ok := f.shared[pa]; ok {
		return n
	}
	return 1
}

// drop takes a holder from frame pa, freeing it with the last.
func (f *frames) drop(pa uint64) {
	switch n := f.holders(pa); {
	case n > 2:
		f.shared[pa] = n - 1
	case n == 2:
		delete(f.shared, pa)
	default:
		f.release(pa)
	}
}

// errNoMemory is what a system call that needs frames returns when guest
// RAM is exhausted: ENOMEM.
var errNoMemory = fmt.Errorf("guest RAM exhausted")

// alloc is a zeroed frame, for a page or a page table.
func (f *frames) alloc() (uint64, error) {
	if len(f.free) == 0 && f.forget != nil && (f.settled >= reclaimAt || f.next+pageSize > f.ram.Size() && f.settled > 0) {
		if err := f.forget(); err != nil {
			return 0, fmt.Errorf("linux: dropping KVM's shadow page tables: %w", err)
		}
		f.forgotten()
	}
	if n := len(f.free); n > 0 {
		pa := f.free[n-1]
		f.free = f.free[:n-1]
		b, err := f.ram.Slice(pa, pageSize)
		if err != nil {
			return 0, err
		}
		clear(b)
		return pa, nil
	}
	if f.next+pageSize > f.ram.Size() {
		return 0, errNoMemory
	}
	pa := f.next
	f.next += pageSize
	return pa, nil
}

// forgotten frees the settled retired frames: KVM has just dropped its
// shadows.
func (f *frames) forgotten() {
	f.free = append(f.free, f.retired[:f.settled]...)
	f.retired = slices.Clone(f.retired[f.settled:])
	f.settled = 0
}

// ran notes that the guest is about to run on the tables of the current
// address space: every table retired so far is on no path it walks.
func (f *frames) ran() { f.settled = len(f.retired) }

// release frees a frame that held a page.
func (f *frames) release(pa uint64) {
	_ = f.unpatchFrame(pa) // a freed frame is RAM the end hashes
	f.free = append(f.free, pa)
}

// retire takes back a frame that held a page table the guest may have
// walked: free once KVM has dropped its shadows.
func (f *frames) retire(pa uint64) { f.retired = append(f.retired, pa) }

// available is how many frames can still be handed out.
func (f *frames) available() uint64 {
	n := (f.ram.Size()-f.next)/pageSize + uint64(len(f.free))
	if f.forget != nil {
		n += uint64(f.settled)
	}
	return n
}

// inUse is how many bytes of frames are handed out.
func (f *frames) inUse() uint64 {
	return f.next - firstFree - uint64(len(f.free)+len(f.retired))*pageSize
}

// Breakpoints (breakpoints.go) replace a byte of code with int3 in the
// frame that holds it, wherever that frame is mapped. The frames keep the
// bytes they replaced: a frame freed, copied or cleared keeps its
// breakpoints' bookkeeping right, and the end puts every byte back, so
// RAM ends as the recording left it.

const int3 = 0xCC

// patchedByte is the byte an int3 replaced, and whether the int3 is a
// breakpoint site (else it is there for returns watched).
type patchedByte struct {
	orig byte
	site bool
}

// patch puts an int3 at pa, keeping the byte it replaces; site marks it
// a site. An int3 already there stays (and becomes a site if site).
func (f *frames) patch(pa uint64, site bool) error {
	frame, off := pa&^pageMask, uint16(pa&pageMask)
	if p, ok := f.patched[frame][off]; ok {
		p.site = p.site || site
		f.patched[frame][off] = p
		return nil
	}
	b, err := f.ram.Slice(pa, 1)
	if err != nil {
		return err
	}
	if f.patched[frame] == nil {
		f.patched[frame] = map[uint16]patchedByte{}
	}
	f.patched[frame][off] = patchedByte{orig: b[0], site: site}
	b[0] = int3
	return nil
}

// at says whether pa holds one of the int3s, and whether it is a site.
func (f *frames) at(pa uint64) (patched, site bool) {
	p, ok := f.patched[pa&^pageMask][uint16(pa&pageMask)]
	return ok, p.site
}

// unpatch puts back the byte the int3 at pa replaced.
func (f *frames) unpatch(pa uint64) error {
	frame, off := pa&^pageMask, uint16(pa&pageMask)
	p, ok := f.patched[frame][off]
	if !ok {
		return nil
	}
	delete(f.patched[frame], off)
	if len(f.patched[frame]) == 0 {
		delete(f.patched, frame)
	}
	return f.ram.Write(pa, []byte{p.orig})
}

// unpatchFrame puts back every byte replaced in frame.
func (f *frames) unpatchFrame(frame uint64) error {
	for off := range f.patched[frame] {
		if err := f.unpatch(frame + uint64(off)); err != nil {
			return err
		}
	}
	return nil
}

// unpatchAll puts back every byte an int3 replaced.
func (f *frames) unpatchAll() error {
	for frame := range f.patched {
		if err := f.unpatchFrame(frame); err != nil {
			return err
		}
	}
	return nil
}

// writePatched writes, at every patched byte, what b says, keeping the
// bookkeeping.
func (f *frames) writePatched(b func(patchedByte) byte) error {
	for frame, offs := range f.patched {
		for off, p := range offs {
			if err := f.ram.Write(frame+uint64(off), []byte{b(p)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// copied records that frame to holds a copy of frame from, int3s
// included.
func (f *frames) copied(from, to uint64) {
	if p := f.patched[from]; p != nil {
		f.patched[to] = maps.Clone(p)
	}
}

// cleared forgets the int3s of a frame whose contents are gone.
func (f *frames) cleared(frame uint64) { delete(f.patched, frame) }
