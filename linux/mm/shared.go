package mm

import (
	"maps"
	"slices"
)

// Object is memory its mappings share (MAP_SHARED): a write through one
// is seen through every other, in any process, at once. An anonymous
// shared mapping has an object of its own, which a fork's child maps as
// its parent does, never copy-on-write; a file's shared mappings map the
// file's object, which the kernel keeps beside the file and copies to
// and from the file's contents around the calls that read or change them.
//
// The object holds a frame per page from the first time the page is
// mapped, until no range of any address space maps it (as a Linux
// mapping holds its file): then it is idle (its owner is told, to copy
// the pages back into the file) and its frames go back.
type Object struct {
	ID     int               // its name in a checkpoint, unique in its Frames
	frames map[uint64]uint64 // page index → frame
	mapped int               // the pages of the ranges that map it, in every address space
	// fill writes page's first contents into b (a file's bytes there);
	// nil, the page starts zeroed.
	fill func(page uint64, b []byte)
	// idle is told when the last range mapping the object is unmapped,
	// before its frames go back.
	idle func()
}

// NewObject is a shared object with no pages yet, its pages' first
// contents from fill (nil: zeros); idle is told when no mapping holds it
// (nil: no one is).
func (f *Frames) NewObject(fill func(page uint64, b []byte), idle func()) *Object {
	f.lastObject++
	o := &Object{ID: f.lastObject, frames: map[uint64]uint64{}, fill: fill, idle: idle}
	f.objects[o.ID] = o
	return o
}

// Object is the live object named id, nil if none.
func (f *Frames) Object(id int) *Object { return f.objects[id] }

// Attach gives a restored object its first contents and idle (NewObject
// says what they do).
func (o *Object) Attach(fill func(page uint64, b []byte), idle func()) { o.fill, o.idle = fill, idle }

// objectFrame is the frame of the object's page, taken and filled the first
// time it is asked for.
func (f *Frames) objectFrame(o *Object, page uint64) (uint64, error) {
	if pa, ok := o.frames[page]; ok {
		return pa, nil
	}
	pa, err := f.alloc()
	if err != nil {
		return 0, err
	}
	if o.fill != nil {
		b, err := f.ram.Slice(pa, PageSize)
		if err != nil {
			f.release(pa)
			return 0, err
		}
		o.fill(page, b)
	}
	o.frames[page] = pa
	return pa, nil
}

// unmapped takes n pages of ranges mapping it from o; with the last, o is
// idle and its frames go back.
func (f *Frames) unmapped(o *Object, n int) {
	o.mapped -= n
	if o.mapped > 0 {
		return
	}
	if o.idle != nil {
		o.idle()
	}
	for _, page := range slices.Sorted(maps.Keys(o.frames)) {
		f.drop(o.frames[page])
	}
	clear(o.frames)
	delete(f.objects, o.ID)
}

// ObjectPage is the bytes of o's page, nil if it holds none: the kernel
// copying a file's contents from or to its shared mappings.
func (f *Frames) ObjectPage(o *Object, page uint64) []byte {
	pa, ok := o.frames[page]
	if !ok {
		return nil
	}
	b, err := f.ram.Slice(pa, PageSize)
	if err != nil {
		return nil // a frame inside RAM: cannot happen
	}
	return b
}

// Shared reports whether va is in a page mapped shared (MAP_SHARED), and
// if so its physical address: a futex there is keyed by it, which every
// process mapping the page shares.
func (as *Space) Shared(va uint64) (pa uint64, ok bool) {
	if v := as.vmaAt(va); v == nil || v.Obj == nil {
		return 0, false
	}
	pa, ok = as.pages[va&^PageMask]
	return pa + va&PageMask, ok
}

// vmaAt is the range holding va, nil if none.
func (as *Space) vmaAt(va uint64) *VMA {
	if i := as.vmas.index(va); i >= 0 {
		return &as.vmas.list[i]
	}
	return nil
}

// MapShared maps [start, end) with p to o's pages from page on: every
// process mapping them shares them, a fork's child too.
func (as *Space) MapShared(start, end uint64, p Prot, o *Object, page uint64) error {
	if err := as.setRange(VMA{Start: start, End: end, Prot: p, Obj: o, Page: page}, mapLimit); err != nil {
		if o.mapped == 0 {
			as.fr.unmapped(o, 0) // a new object no one maps
		}
		return err
	}
	o.mapped += int((end - start) / PageSize)
	return nil
}

// dropPages gives back the frames of the pages vas (in order), and to
// each shared object in objs the pages of the ranges that mapped it
// (objectPages, taken before the ranges changed).
func (as *Space) dropPages(vas []uint64, objs map[*Object]int) {
	for _, va := range vas {
		as.fr.drop(as.pages[va])
		delete(as.pages, va)
		delete(as.cow, va)
	}
	for _, o := range sortedObjects(objs) {
		as.fr.unmapped(o, objs[o])
	}
}

// objectPages counts the pages of [start, end) the ranges map of each
// shared object.
func (as *Space) objectPages(start, end uint64) map[*Object]int {
	var out map[*Object]int
	for _, v := range as.vmas.list[as.vmas.first(start):] {
		if v.Start >= end {
			break
		}
		if v.Obj != nil && v.End > start {
			if out == nil {
				out = map[*Object]int{}
			}
			out[v.Obj] += int((min(v.End, end) - max(v.Start, start)) / PageSize)
		}
	}
	return out
}

// sortedObjects are objs' objects by ID: objects go idle, and give back
// their frames, in an order a replay repeats.
func sortedObjects(objs map[*Object]int) []*Object {
	out := slices.Collect(maps.Keys(objs))
	slices.SortFunc(out, func(a, b *Object) int { return a.ID - b.ID })
	return out
}
