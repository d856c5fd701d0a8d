package mm

// Mapping is a file mapped into a process: what names the addresses in
// it.
type Mapping struct {
	PID int
	// Image is which of the process's images holds it: the count of its
	// execs when it was mapped. A debugger's breakpoint belongs to one.
	Image      uint64
	Path       string
	Start, End uint64 // [Start, End), page-aligned
	Offset     uint64 // the file offset mapped at Start
	Exec       bool   // mapped executable
	// Restored is set when a mapping made before a checkpoint is told of
	// again, after the program was restored from it.
	Restored bool
	data     []byte // the file's contents when it was mapped
}

// FileOffset is the file offset of va in m.
func (m *Mapping) FileOffset(va uint64) uint64 { return va - m.Start + m.Offset }

// Data is the file's contents when it was mapped.
func (m *Mapping) Data() []byte { return m.data }

func (m Mapping) Bounds() (start, end uint64) { return m.Start, m.End }

// Respan is the part of m over [start, end), its offset moved with its
// start.
func (m Mapping) Respan(start, end uint64) Mapping {
	m.Offset += start - m.Start
	m.Start, m.End = start, end
	return m
}

// Joins: two file mappings stay two, whatever they map.
func (m Mapping) Joins(Mapping) bool { return false }

// FileAt is the file mapping holding va, nil if none.
func (as *Space) FileAt(va uint64) *Mapping {
	i := as.files.index(va)
	if i < 0 {
		return nil
	}
	m := as.files.list[i]
	return &m
}

// AddFile records a file mapping of data, replacing what it covers, and
// returns it as recorded.
func (as *Space) AddFile(m Mapping, data []byte) Mapping {
	m.data = data
	_, _ = as.files.set(m, noLimit) // no limit: cannot fail
	return m
}

// Files are the file mappings, in order.
func (as *Space) Files() []Mapping { return as.files.clone().list }

// SetOwner names pid, and its image, as the process of every file
// mapping.
func (as *Space) SetOwner(pid int, image uint64) {
	for i := range as.files.list {
		as.files.list[i].PID, as.files.list[i].Image = pid, image
	}
}

// MoveData gives the mappings that hold old (the same array) data
// instead: the file they map has new contents, and the old array is
// freed rather than held.
func (as *Space) MoveData(old, data []byte) {
	if cap(old) == 0 {
		return
	}
	for i := range as.files.list {
		if m := &as.files.list[i]; cap(m.data) > 0 && &m.data[:1][0] == &old[:1][0] {
			m.data = data
		}
	}
}
