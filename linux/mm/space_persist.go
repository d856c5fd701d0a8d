package mm

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/reprise-vm/reprise/abi"
)

// SavedSpace is an address space in a checkpoint. Its field names (and
// those of SavedVMA and SavedMapping) are the checkpoint's gob layout:
// keep them.
type SavedSpace struct {
	Root     uint64
	Fresh    []uint64
	Pages    map[uint64]uint64
	VMAs     []SavedVMA
	Tables   []uint64
	TSCSites map[uint64]uint8 // Space.sites: address, length
	COW      []uint64
	Files    []SavedMapping
}

type SavedVMA struct {
	Start, End uint64
	Prot       uint8
	Obj        int // the shared object's ID, 0 if private
	Page       uint64
	Lazy       bool
}

// SavedMapping is a file mapping. Its contents are node Node's (an index
// the kernel gives) when they were the same at the checkpoint, else Data.
type SavedMapping struct {
	Path       string
	Start, End uint64
	Offset     uint64
	Exec       bool
	Node       int
	Data       []byte
}

// Save is the address space's state; node numbers a file whose contents
// are a mapping's data, -1 if none is.
func (as *Space) Save(node func(data []byte) int) *SavedSpace {
	s := &SavedSpace{Root: as.root, Fresh: slices.Sorted(maps.Keys(as.fresh)), Pages: maps.Clone(as.pages),
		Tables: slices.Clone(as.tables), TSCSites: maps.Clone(as.sites), COW: slices.Sorted(maps.Keys(as.cow))}
	for _, v := range as.vmas.list {
		sv := SavedVMA{Start: v.Start, End: v.End, Prot: uint8(v.Prot), Lazy: v.Lazy}
		if v.Obj != nil {
			sv.Obj, sv.Page = v.Obj.ID, v.Page
		}
		s.VMAs = append(s.VMAs, sv)
	}
	for _, m := range as.files.list {
		sm := SavedMapping{Path: m.Path, Start: m.Start, End: m.End, Offset: m.Offset, Exec: m.Exec, Node: -1}
		if n := node(m.data); n >= 0 {
			sm.Node = n
		} else {
			sm.Data = m.data
		}
		s.Files = append(s.Files, sm)
	}
	return s
}

// Limits are what a saved address space is checked against.
type Limits struct {
	// Nodes is the count of files a mapping may name.
	Nodes int
	// SiteLen reports whether n is the length of an instruction the
	// kernel patches.
	SiteLen func(n uint8) bool
	// Frames are the saved allocator: the frames handed out, and the
	// shared objects a range may map.
	Frames *SavedFrames
}

// Check refuses a saved address space with a table, page or range
// outside its bounds, or a mapping naming a file there is not.
func (s *SavedSpace) Check(l Limits) error {
	if !l.Frames.InUse(s.Root) {
		return fmt.Errorf("page-table root %#x", s.Root)
	}
	for _, list := range [][]uint64{s.Tables, s.Fresh} {
		for _, pa := range list {
			if !l.Frames.InUse(pa) {
				return fmt.Errorf("page table %#x", pa)
			}
		}
	}
	for va, pa := range s.Pages {
		if va%PageSize != 0 || va >= MaxUserAddr || !l.Frames.InUse(pa) {
			return fmt.Errorf("page %#x in frame %#x", va, pa)
		}
	}
	for _, va := range slices.Concat(slices.Collect(maps.Keys(s.TSCSites)), s.COW) {
		if va >= MaxUserAddr || s.TSCSites[va] != 0 && (s.TSCSites[va] > MaxSiteLen || !l.SiteLen(s.TSCSites[va])) {
			return fmt.Errorf("address %#x", va)
		}
	}
	var end uint64
	for _, v := range s.VMAs {
		if v.Start < end || v.End <= v.Start || v.Start%PageSize != 0 || v.End%PageSize != 0 || v.End > MaxUserAddr {
			return fmt.Errorf("range [%#x, %#x) after %#x", v.Start, v.End, end)
		}
		if v.Obj != 0 && (v.Lazy || !l.Frames.object(v.Obj) || v.Page > maxObjectPage-(v.End-v.Start)/PageSize) {
			return fmt.Errorf("range [%#x, %#x) maps page %d of shared object %d (lazy: %t)", v.Start, v.End, v.Page, v.Obj, v.Lazy)
		}
		end = v.End
	}
	end = 0
	for _, m := range s.Files {
		if m.Start < end || m.End <= m.Start || m.End > MaxUserAddr || m.Node < -1 || m.Node >= l.Nodes || len(m.Path) > abi.LinuxMaxPath {
			return fmt.Errorf("file mapping [%#x, %#x) of %q after %#x", m.Start, m.End, m.Path, end)
		}
		end = m.End
	}
	return nil
}

// RestoreSpace is the address space of a checked SavedSpace, its frames
// fr's, its mappings named as pid's; data gives the contents of the file
// a mapping names by index.
func RestoreSpace(fr *Frames, s *SavedSpace, pid int, data func(node int) []byte) *Space {
	as := &Space{ram: fr.ram, fr: fr, root: s.Root, fresh: map[uint64]bool{}, pages: map[uint64]uint64{},
		tables: slices.Clone(s.Tables), sites: map[uint64]uint8{}, cow: map[uint64]bool{}}
	for _, pa := range s.Fresh {
		as.fresh[pa] = true
	}
	maps.Copy(as.pages, s.Pages)
	maps.Copy(as.sites, s.TSCSites)
	for _, va := range s.COW {
		as.cow[va] = true
	}
	for _, v := range s.VMAs {
		as.vmas.list = append(as.vmas.list, VMA{Start: v.Start, End: v.End, Prot: Prot(v.Prot), Obj: fr.objects[v.Obj], Page: v.Page, Lazy: v.Lazy})
	}
	for _, m := range s.Files {
		d := m.Data
		if m.Node >= 0 {
			d = data(m.Node)
		}
		as.files.list = append(as.files.list, Mapping{PID: pid, Path: m.Path, Start: m.Start, End: m.End, Offset: m.Offset, Exec: m.Exec, data: d})
	}
	return as
}

// CheckCode checks the executable file mappings against RAM, which the
// replay checks against the tape: each byte of their pages is the file's
// byte at the offset the mapping names, or zero (past a segment's file
// part), or a patched instruction's. Probes are placed, and their hits
// named, by these offsets: a mapping that misplaces its file would put
// them where the program never runs.
func (as *Space) CheckCode() error {
	for _, m := range as.files.list {
		if !m.Exec {
			continue
		}
		if m.Offset%PageSize != 0 || m.Offset > uint64(len(m.data)) {
			return fmt.Errorf("file mapping [%#x, %#x) of %q at offset %#x of %d bytes", m.Start, m.End, m.Path, m.Offset, len(m.data))
		}
		for va := m.Start; va < m.End; va += PageSize {
			pa, ok := as.pages[va]
			if !ok || as.ProtAt(va)&ProtWrite != 0 {
				continue // the program may have written its own code there
			}
			got, err := as.ram.Slice(pa, PageSize)
			if err != nil {
				return err
			}
			at := m.Offset + (va - m.Start)
			if at+PageSize <= uint64(len(m.data)) && bytes.Equal(got, m.data[at:at+PageSize]) {
				continue // most pages: the file's, unpatched
			}
			for j, b := range got {
				inFile := at+uint64(j) < uint64(len(m.data)) && m.data[at+uint64(j)] == b
				if b == 0 || inFile || as.inSite(va+uint64(j)) {
					continue
				}
				return fmt.Errorf("file mapping [%#x, %#x) of %q: the byte at %#x is not the file's at offset %#x", m.Start, m.End, m.Path, va+uint64(j), at+uint64(j))
			}
		}
	}
	return nil
}

// MaxSiteLen is the longest instruction the kernel patches (RDTSCP);
// Check refuses a longer site.
const MaxSiteLen = 3

// inSite reports whether va is in an instruction the kernel patched.
func (as *Space) inSite(va uint64) bool {
	for back := uint64(0); back < MaxSiteLen && back <= va; back++ {
		if n, ok := as.sites[va-back]; ok && uint64(n) > back {
			return true
		}
	}
	return false
}
