package mm

import (
	"slices"
	"sort"
)

// The changes system calls make to the ranges (mmap, mprotect, munmap,
// mremap, brk), each of which fails having changed nothing where ranges
// or frames fall short.

// Map maps [start, end) with p, giving every accessible page a frame (a
// page that had one keeps its contents), and records the range. Where
// the ranges or the frames fall short it changes nothing.
func (as *Space) Map(start, end uint64, p Prot) error {
	return as.setRange(VMA{Start: start, End: end, Prot: p}, mapLimit)
}

// MapLazy maps [start, end) with p as Map does, but a page gets its frame
// when first touched (FaultIn): a stack of 8 MiB of which a program uses
// a few pages.
func (as *Space) MapLazy(start, end uint64, p Prot) error {
	return as.setRange(VMA{Start: start, End: end, Prot: p, Lazy: true}, mapLimit)
}

// setRange records v (within limit's count of ranges) and gives its pages
// their protection, undoing the first if the second falls short of
// frames.
func (as *Space) setRange(v VMA, limit int) error {
	undo, err := as.vmas.set(v, limit)
	if err != nil {
		return err
	}
	return as.protectOrUndo(v.Start, v.End, v.Prot, undo)
}

// protectOrUndo gives the pages of [start, end) p, calling undo (which
// puts the ranges back) if it cannot.
func (as *Space) protectOrUndo(start, end uint64, p Prot, undo func()) error {
	if err := as.protectPages(start, end, p); err != nil {
		undo()
		return err
	}
	return nil
}

// protectPages sets the leaf entries of [start, end) for p. It takes the
// frames it needs only if there are enough for all, so it fails (no
// memory) having changed nothing.
func (as *Space) protectPages(start, end uint64, p Prot) error {
	flags := as.fr.leafFlags(p)
	present := as.present(start, end)
	if flags == 0 {
		if tablesFor(present) > as.fr.available() {
			return ErrNoMemory
		}
		for _, va := range present {
			if err := as.setLeaf(va, as.pages[va]); err != nil {
				return err
			}
		}
		return nil
	}
	// Every page needs a frame, but a lazy range's untouched ones: refuse
	// what RAM cannot hold before taking any (the range is the program's
	// to choose).
	if (end-start)/PageSize-uint64(len(present))-as.untouched(start, end, present)+tablesForRange(start, end) > as.fr.available() {
		return ErrNoMemory
	}
	if p&ProtWrite != 0 {
		// A frame a fork shares stays read-only until written
		// (copy-on-write); a shared mapping's is written by all.
		for _, va := range present {
			if as.fr.holders(as.pages[va]) > 1 && as.vmaAt(va).Obj == nil {
				as.cow[va] = true
			}
		}
	}
	var v *VMA // va's, found again as va leaves it
	for va := start; va < end; va += PageSize {
		pa, ok := as.pages[va]
		if !ok {
			if v == nil || va >= v.End {
				v = as.vmaAt(va)
			}
			if v != nil && v.Lazy {
				continue // its frame comes when it is touched
			}
			var err error
			if pa, err = as.newPage(va); err != nil {
				return err
			}
			as.pages[va] = pa
		}
		f := flags
		if as.cow[va] {
			f &^= pteWrite
		}
		if err := as.setLeaf(va, pa|f); err != nil {
			return err
		}
	}
	return nil
}

// newPage is a frame for the page at va, which has none: a zeroed one,
// or in a shared mapping its object's.
func (as *Space) newPage(va uint64) (uint64, error) {
	v := as.vmaAt(va)
	if v == nil || v.Obj == nil {
		return as.fr.alloc()
	}
	pa, err := as.fr.objectFrame(v.Obj, v.Page+(va-v.Start)/PageSize)
	if err != nil {
		return 0, err
	}
	as.fr.share(pa)
	return pa, nil
}

// untouched counts the pages of [start, end) in lazy ranges that have no
// frame; present are the range's pages that have one, in order.
func (as *Space) untouched(start, end uint64, present []uint64) uint64 {
	var n uint64
	list := as.vmas.list
	for k := sort.Search(len(list), func(k int) bool { return list[k].End > start }); k < len(list) && list[k].Start < end; k++ {
		v := list[k]
		lo, hi := max(v.Start, start), min(v.End, end)
		if !v.Lazy {
			continue
		}
		i, _ := slices.BinarySearch(present, lo)
		j, _ := slices.BinarySearch(present, hi)
		n += (hi-lo)/PageSize - uint64(j-i)
	}
	return n
}

// present are the mapped pages of [start, end), in order, found without
// walking a range far larger than what is mapped.
func (as *Space) present(start, end uint64) []uint64 {
	var out []uint64
	if (end-start)/PageSize <= uint64(len(as.pages)) {
		for va := start; va < end; va += PageSize {
			if _, ok := as.pages[va]; ok {
				out = append(out, va)
			}
		}
		return out
	}
	for va := range as.pages {
		if va >= start && va < end {
			out = append(out, va)
		}
	}
	slices.Sort(out)
	return out
}

// Protect changes the protection of the mapped pages of [start, end);
// it fails if part of the range is not mapped (ENOMEM in Linux).
func (as *Space) Protect(start, end uint64, p Prot) error {
	if !as.Covered(start, end) {
		return ErrUnmapped
	}
	undo, err := as.vmas.update(start, end, func(v VMA) VMA { v.Prot = p; return v }, splitLimit)
	if err != nil {
		return err
	}
	return as.protectOrUndo(start, end, p, undo)
}

// Unmap removes [start, end), frees its frames, and frees the page tables
// it leaves empty. Short of frames for the tables it must copy, or of
// ranges for a split, it changes nothing.
func (as *Space) Unmap(start, end uint64) error {
	present := as.present(start, end)
	objs := as.objectPages(start, end)
	undo, err := as.vmas.remove(start, end, splitLimit)
	if err != nil {
		return err
	}
	freed := uint64(0)
	for _, va := range present {
		if as.fr.holders(as.pages[va]) == 1 {
			freed++
		}
	}
	if tablesFor(present) > as.fr.available()+freed {
		undo()
		return ErrNoMemory
	}
	_, _ = as.files.remove(start, end, noLimit) // no limit: cannot fail
	as.dropPages(present, objs)
	for _, va := range present {
		if err := as.setPTE(va, 0); err != nil {
			return err
		}
	}
	return as.pruneAll(present)
}

// pruneAll prunes the tables of the pages vas (in order) once each.
func (as *Space) pruneAll(vas []uint64) error {
	for i, va := range vas {
		if i == 0 || va>>21 != vas[i-1]>>21 {
			if err := as.prune(va); err != nil {
				return err
			}
		}
	}
	return nil
}

// Within reports whether one range holds all of [start, end), as mremap
// requires of what it moves or grows.
func (as *Space) Within(start, end uint64) bool {
	v := as.vmaAt(start)
	return v != nil && v.End >= end
}

// Extend maps [at, end) as the range ending at at goes on: its
// protection, and if shared its object's next pages (mremap growing a
// mapping in place).
func (as *Space) Extend(at, end uint64) error {
	v := as.vmaAt(at - 1)
	if v == nil || v.End != at {
		return ErrUnmapped
	}
	if v.Obj != nil {
		return as.MapShared(at, end, v.Prot, v.Obj, v.Page+(at-v.Start)/PageSize)
	}
	return as.Map(at, end, v.Prot)
}

// Remap moves the range [from, from+n), which one range holds, to the
// free [to, to+size), its pages' frames with it, and maps the rest of it
// as that range (mremap). Short of frames or ranges, it changes nothing.
func (as *Space) Remap(from, n, to, size uint64) error {
	v := as.vmaAt(from)
	if v == nil || v.End < from+n {
		return ErrUnmapped
	}
	p := v.Prot
	moved := v.Respan(from, from+n) // its object's page at from
	moved.Start, moved.End = to, to+size
	present := as.present(from, from+n)
	need := tablesFor(present) + tablesForRange(to, to+size)
	if p != 0 {
		need += (size - uint64(len(present))*PageSize) / PageSize
	}
	if need > as.fr.available() {
		return ErrNoMemory
	}
	undoOld, err := as.vmas.remove(from, from+n, splitLimit)
	if err != nil {
		return err
	}
	if _, err := as.vmas.set(moved, mapLimit); err != nil {
		undoOld()
		return err
	}
	_, _ = as.files.remove(from, from+n, noLimit) // no limit: cannot fail
	for _, va := range present {
		nva := to + (va - from)
		as.pages[nva] = as.pages[va]
		if as.cow[va] {
			as.cow[nva] = true
		}
		delete(as.pages, va)
		delete(as.cow, va)
		if err := as.setPTE(va, 0); err != nil {
			return err
		}
	}
	if err := as.pruneAll(present); err != nil {
		return err
	}
	if moved.Obj != nil {
		moved.Obj.mapped += int((size - n) / PageSize)
	}
	return as.protectPages(to, to+size, p)
}

// Covered reports whether every page of [start, end) is in some range.
func (as *Space) Covered(start, end uint64) bool {
	i := as.vmas.index(start)
	if i < 0 {
		return false
	}
	vmas := as.vmas.list
	at := vmas[i].End
	for i++; at < end; i++ {
		if i == len(vmas) || vmas[i].Start != at {
			return false
		}
		at = vmas[i].End
	}
	return true
}

// FindFree returns the highest free range of length bytes below MmapTop.
func (as *Space) FindFree(length uint64) (uint64, bool) {
	vmas := as.vmas.list
	top := uint64(MmapTop)
	below := sort.Search(len(vmas), func(i int) bool { return vmas[i].Start >= top })
	for i := below - 1; i >= 0; i-- {
		v := vmas[i]
		if v.End <= top && top-v.End >= length {
			return top - length, true
		}
		top = min(top, v.Start)
	}
	if top-MinUserAddr >= length {
		return top - length, true
	}
	return 0, false
}

// Free reports whether [start, end) overlaps no range.
func (as *Space) Free(start, end uint64) bool {
	vmas := as.vmas.list
	i := sort.Search(len(vmas), func(i int) bool { return vmas[i].End > start })
	return i == len(vmas) || vmas[i].Start >= end
}

// ProtAt is the protection of the range holding va (0 if none).
func (as *Space) ProtAt(va uint64) Prot {
	if i := as.vmas.index(va); i >= 0 {
		return as.vmas.list[i].Prot
	}
	return 0
}

// VMAs are the mapped ranges, in order.
func (as *Space) VMAs() []VMA { return slices.Clone(as.vmas.list) }
