package mm

import (
	"fmt"
	"maps"
	"slices"

	"github.com/reprise-vm/reprise/vmm/memory"
)

// SavedFrames is the allocator in a checkpoint. Its field names are the
// checkpoint's gob layout: keep them.
type SavedFrames struct {
	Next    uint64
	Free    []uint64
	Retired []uint64 // Frames.retired, the first Settled of them settled
	Settled int
	Shared  map[uint64]int
	// Objects are the live shared objects; LastObject the last ID given.
	Objects    []SavedObject
	LastObject int
}

// SavedObject is a shared object: its frames by page, and the pages of
// the ranges that map it.
type SavedObject struct {
	ID     int
	Frames map[uint64]uint64
	Mapped int
}

// Save is the allocator's state. The int3s are not saved: a checkpoint is
// taken with none placed (Patched).
func (f *Frames) Save() SavedFrames {
	s := SavedFrames{Next: f.next, Free: slices.Clone(f.free), Retired: slices.Clone(f.retired), Settled: f.settled,
		Shared: maps.Clone(f.shared), LastObject: f.lastObject}
	for _, id := range slices.Sorted(maps.Keys(f.objects)) {
		o := f.objects[id]
		s.Objects = append(s.Objects, SavedObject{ID: id, Frames: maps.Clone(o.frames), Mapped: o.mapped})
	}
	return s
}

// Check refuses a saved allocator whose frames lie outside the ramSize
// bytes of RAM, or that has a frame held by more than maxHolders.
func (s *SavedFrames) Check(ramSize uint64, maxHolders int) error {
	if s.Next < FirstFree || s.Next > ramSize || s.Next%PageSize != 0 {
		return fmt.Errorf("frames end at %#x (want %#x to %#x, page-aligned)", s.Next, FirstFree, ramSize)
	}
	for _, pa := range slices.Concat(s.Free, s.Retired) {
		if !s.InUse(pa) {
			return fmt.Errorf("free frame %#x outside [%#x, %#x)", pa, FirstFree, s.Next)
		}
	}
	if s.Settled < 0 || s.Settled > len(s.Retired) {
		return fmt.Errorf("%d of %d retired frames settled", s.Settled, len(s.Retired))
	}
	for pa, n := range s.Shared {
		if !s.InUse(pa) || n < 2 || n > maxHolders+1 { // +1: a shared object's
			return fmt.Errorf("shared frame %#x held %d times", pa, n)
		}
	}
	last := 0
	for _, o := range s.Objects {
		if o.ID <= last || o.ID > s.LastObject || o.Mapped <= 0 || o.Mapped > MaxUserAddr/PageSize*maxHolders {
			return fmt.Errorf("shared object %d (after %d, of %d) mapped %d pages", o.ID, last, s.LastObject, o.Mapped)
		}
		last = o.ID
		for page, pa := range o.Frames {
			if !s.InUse(pa) || page > maxObjectPage {
				return fmt.Errorf("shared object %d: page %d in frame %#x", o.ID, page, pa)
			}
		}
	}
	return nil
}

// maxObjectPage is the last page a shared object may have: a file's at
// the largest offset.
const maxObjectPage = 1<<63/PageSize - 1

// object reports whether id names one of the saved shared objects.
func (s *SavedFrames) object(id int) bool {
	_, ok := slices.BinarySearchFunc(s.Objects, id, func(o SavedObject, id int) int { return o.ID - id })
	return ok
}

// InUse reports whether pa is a frame the saved allocator has handed out
// at some time.
func (s *SavedFrames) InUse(pa uint64) bool {
	return pa >= FirstFree && pa < s.Next && pa%PageSize == 0
}

// RestoreFrames is the allocator of a checked SavedFrames, over the
// restored ram, populated up to the frames' end: the program may write any
// frame handed out, the VMM having written it or not.
func RestoreFrames(ram *memory.RAM, forget func() error, s *SavedFrames) *Frames {
	ram.Reach(s.Next)
	f := NewFrames(ram, forget)
	f.next, f.free = s.Next, slices.Clone(s.Free)
	f.retired, f.settled = slices.Clone(s.Retired), s.Settled
	maps.Copy(f.shared, s.Shared)
	f.lastObject = s.LastObject
	for _, o := range s.Objects {
		f.objects[o.ID] = &Object{ID: o.ID, frames: maps.Clone(o.Frames), mapped: o.Mapped}
	}
	return f
}
