package mm

// Prot is a mapping's protection (PROT_READ, PROT_WRITE, PROT_EXEC).
type Prot uint8

const (
	ProtRead  Prot = 1
	ProtWrite Prot = 2
	ProtExec  Prot = 4
)

// VMA is a range of a process's virtual memory with one protection,
// private or mapped shared to an object's pages.
type VMA struct {
	Start, End uint64
	Prot       Prot
	Obj        *Object // the shared object it maps, nil if private
	Page       uint64  // the object's page at Start
	// Lazy: a page gets its frame when first touched, not when mapped
	// (MapLazy; private only).
	Lazy bool
}

func (v VMA) Bounds() (start, end uint64) { return v.Start, v.End }

func (v VMA) Respan(start, end uint64) VMA {
	if v.Obj != nil {
		v.Page += (start - v.Start) / PageSize
	}
	v.Start, v.End = start, end
	return v
}

// Joins: neighbours of the same protection are one range, as Linux
// merges anonymous mappings; shared ones if they map one object's pages
// in a row.
func (v VMA) Joins(next VMA) bool {
	return v.End == next.Start && v.Prot == next.Prot && v.Obj == next.Obj && v.Lazy == next.Lazy &&
		(v.Obj == nil || next.Page == v.Page+(v.End-v.Start)/PageSize)
}

// MaxMapCount is Linux's vm.max_map_count: the ranges a process may
// have. As Linux counts them, neighbours with the same protection are one
// (Linux merges anonymous mappings so; a file mapping it would keep apart
// is counted with its neighbour here).
const MaxMapCount = 65530

// limits on the count of ranges a change may leave, as Linux checks them:
// a new mapping is refused only once there are more than MaxMapCount; a
// split (mprotect, munmap) may not make more than MaxMapCount.
const (
	mapLimit   = MaxMapCount + 1
	splitLimit = MaxMapCount
)

// CheckRange checks [start, start+length) is page-aligned user memory.
func CheckRange(start, length uint64) (end uint64, ok bool) {
	end = start + length
	return end, start&PageMask == 0 && length > 0 && length&PageMask == 0 &&
		start >= MinUserAddr && end <= MaxUserAddr && end > start
}

// leafFlags are the leaf entry's bits for a page of protection p.
func (f *Frames) leafFlags(p Prot) uint64 {
	var seen uint64 // the bits a CPU sets on an access: set already, or not
	if f.policy.PresetAccessed {
		seen = pteAccessed
		if p&ProtWrite != 0 {
			seen |= pteDirty
		}
	}
	switch {
	case p == 0:
		return 0
	case p&ProtWrite != 0:
		return ptePresent | pteUser | pteWrite | seen
	}
	return ptePresent | pteUser | seen
}
