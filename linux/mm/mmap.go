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
	return as.setRange(start, end, p, mapLimit)
}

// setRange records [start, end) as mapped with p (within limit's count
// of ranges) and gives its pages p, undoing the first if the second falls
// short of frames.
func (as *Space) setRange(start, end uint64, p Prot, limit int) error {
	undo, err := as.vmas.set(VMA{start, end, p}, limit)
	if err != nil {
		return err
	}
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
	flags := leafFlags(p)
	present := as.present(start, end)
	if flags == 0 {
		if tablesFor(present) > as.fr.available() {
			return ErrNoMemory
		}
		for _, va := range present {
			if err := as.setPTE(va, as.pages[va]); err != nil {
				return err
			}
		}
		return nil
	}
	// Every page needs a frame: refuse what RAM cannot hold before
	// taking any (the range is the program's to choose).
	if (end-start)/PageSize-uint64(len(present))+tablesForRange(start, end) > as.fr.available() {
		return ErrNoMemory
	}
	if p&ProtWrite != 0 {
		// A shared frame stays read-only until written (copy-on-write).
		for _, va := range present {
			if as.fr.holders(as.pages[va]) > 1 {
				as.cow[va] = true
			}
		}
	}
	for va := start; va < end; va += PageSize {
		pa, ok := as.pages[va]
		if !ok {
			var err error
			if pa, err = as.fr.alloc(); err != nil {
				return err
			}
			as.pages[va] = pa
		}
		f := flags
		if as.cow[va] {
			f &^= pteWrite
		}
		if err := as.setPTE(va, pa|f); err != nil {
			return err
		}
	}
	return nil
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
	return as.setRange(start, end, p, splitLimit)
}

// Unmap removes [start, end), frees its frames, and frees the page tables
// it leaves empty. Short of frames for the tables it must copy, or of
// ranges for a split, it changes nothing.
func (as *Space) Unmap(start, end uint64) error {
	present := as.present(start, end)
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
	for _, va := range present {
		as.fr.drop(as.pages[va])
		delete(as.pages, va)
		delete(as.cow, va)
	}
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

// Remap moves the range [from, from+n) to the free [to, to+size), its
// pages' frames with it, and maps the rest of it with p (mremap). Short of
// frames or ranges, it changes nothing.
func (as *Space) Remap(from, n, to, size uint64, p Prot) error {
	present := as.present(from, from+n)
	need := tablesFor(present) + tablesForRange(to, to+size)
	if leafFlags(p) != 0 {
		need += (size - uint64(len(present))*PageSize) / PageSize
	}
	if need > as.fr.available() {
		return ErrNoMemory
	}
	undoOld, err := as.vmas.remove(from, from+n, splitLimit)
	if err != nil {
		return err
	}
	if _, err := as.vmas.set(VMA{to, to + size, p}, mapLimit); err != nil {
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
