package linux

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/reprise-vm/reprise/abi"

	"github.com/reprise-vm/reprise/vmm/memory"
	"github.com/reprise-vm/reprise/vmm/x86"
)

// prot is a mapping's protection (PROT_READ, PROT_WRITE, PROT_EXEC).
type prot uint8

const (
	protRead  prot = 1
	protWrite prot = 2
	protExec  prot = 4
)

// vma is a range of a process's virtual memory with one protection.
type vma struct {
	start, end uint64
	prot       prot
}

// addressSpace is a process's virtual memory: the page tables the guest
// CPU walks, which the VMM alone writes, and the ranges mapped in them.
// Every accessible page has a frame from the moment it is mapped.
//
// The page tables are never changed in place once the guest may have
// walked them: where KVM shadows guest page tables (PVM hosts: shadow
// paging), it keeps a shadow per table frame and learns of changes only
// from the guest's own writes, which it write-protects; the VMM's writes
// from the host go unseen, and a reused or rewritten table would be
// walked through a stale shadow. So a change copies the tables on its
// path to frames that have not been tables since KVM last dropped its
// shadows, up to a new root (the new CR3), and the tables it replaced are
// not tables again until KVM has dropped its shadows (frames.retired).
// Tables built since the last time the guest ran are fresh and change in
// place. A table left empty by an unmap goes too, as Linux frees it.
// (With EPT the guest walks its tables itself, and the new CR3 is the TLB
// flush.)
type addressSpace struct {
	ram    *memory.RAM
	fr     *frames
	root   uint64          // the PML4 in (or bound for) CR3
	fresh  map[uint64]bool // table frames the guest has not run on yet
	pages  map[uint64]uint64
	vmas   []vma    // sorted, disjoint
	tables []uint64 // every table frame in use, the root included
	// tscSites are the RDTSCs and RDTSCPs patched in this address space,
	// each with its length (tsc.go).
	tscSites map[uint64]uint8
	// cow are the writable pages whose frame a fork shares: mapped
	// read-only until a write copies the frame (breakCOW).
	cow map[uint64]bool
	// files are the file mappings, sorted, disjoint (breakpoints.go).
	files []Mapping
}

// Directory entries grant everything; permissions are decided at the leaf.
//
// Directory entries and the system area's pages are marked accessed (and
// the latter dirty) from the start: the CPU sets those bits when it first
// walks or writes through an entry, and a replay's breakpoints make it
// walk and write where its recording did not (the trap stubs, the
// descriptor tables, the debug stack). Set beforehand, they never change.
const dirFlags = x86.PTEPresent | x86.PTEWrite | x86.PTEUser | x86.PTEAccessed

func newAddressSpace(ram *memory.RAM, fr *frames) (*addressSpace, error) {
	as := &addressSpace{ram: ram, fr: fr, fresh: map[uint64]bool{}, pages: map[uint64]uint64{}, tscSites: map[uint64]uint8{}, cow: map[uint64]bool{}}
	root, err := as.newTable()
	if err != nil {
		return nil, err
	}
	as.root = root
	// The system area, identity-mapped for the CPU's own accesses
	// (descriptor tables, TSS, exception stacks), and the stub page,
	// which CPL3 code executes.
	for va := uint64(pageSize); va < systemTop; va += pageSize {
		flags := uint64(x86.PTEPresent | x86.PTEWrite | x86.PTEAccessed | x86.PTEDirty)
		switch va {
		case stubPage:
			flags = x86.PTEPresent | x86.PTEUser | x86.PTEAccessed
		case abi.SWBC: // an instrumented program's branch counter (swbc.go)
			flags = x86.PTEPresent | x86.PTEWrite | x86.PTEUser | x86.PTEAccessed | x86.PTEDirty
		}
		if err := as.setPTE(va, va|flags); err != nil {
			return nil, err
		}
	}
	return as, nil
}

// cr3 is the page-table root the guest must run on.
func (as *addressSpace) cr3() uint64 { return as.root }

// published marks every table as walked by the guest: the guest is about
// to run on cr3. Later changes copy them.
func (as *addressSpace) published() { clear(as.fresh) }

// newTable is a zeroed page-table frame no shadow KVM keeps was made of.
func (as *addressSpace) newTable() (uint64, error) {
	pa, err := as.fr.alloc()
	if err != nil {
		return 0, err
	}
	as.fresh[pa] = true
	as.tables = append(as.tables, pa)
	return pa, nil
}

// own returns a fresh copy of the published table at pa (or pa itself if
// it is fresh): the caller is about to change it.
func (as *addressSpace) own(pa uint64) (uint64, error) {
	if as.fresh[pa] {
		return pa, nil
	}
	cp, err := as.newTable()
	if err != nil {
		return 0, err
	}
	from, err := as.ram.Slice(pa, pageSize)
	if err != nil {
		return 0, err
	}
	to, err := as.ram.Slice(cp, pageSize)
	if err != nil {
		return 0, err
	}
	copy(to, from)
	as.retire(pa)
	return cp, nil
}

// retire drops a table no longer in use: one the guest never walked is
// free at once, one it may have waits for KVM to drop its shadows.
func (as *addressSpace) retire(pa uint64) {
	for i, t := range as.tables {
		if t == pa {
			as.tables = append(as.tables[:i], as.tables[i+1:]...)
			break
		}
	}
	if as.fresh[pa] {
		delete(as.fresh, pa)
		as.fr.release(pa)
		return
	}
	as.fr.retire(pa)
}

// setPTE writes the leaf entry of va, copying the tables on its path that
// the guest has run on, and building missing ones.
func (as *addressSpace) setPTE(va, pte uint64) error { return as.setEntry(va, 0, pte) }

// entryIndex is the slot of va in a table of level (0 the leaf table, 3
// the root).
func entryIndex(va uint64, level int) uint64 { return (va >> (12 + 9*uint(level))) & 0x1ff }

const tableAddrMask = 0x000f_ffff_ffff_f000

// setEntry writes va's entry in its table of level, copying the tables on
// the path there that the guest has run on, and building missing ones.
func (as *addressSpace) setEntry(va uint64, level int, e uint64) error {
	root, err := as.own(as.root)
	if err != nil {
		return err
	}
	as.root = root
	table := root
	for l := 3; l > level; l-- {
		slot := table + entryIndex(va, l)*8
		pe, err := as.ram.Uint64(slot)
		if err != nil {
			return err
		}
		var child uint64
		if pe&x86.PTEPresent == 0 {
			if e == 0 {
				return nil // nothing mapped here to remove
			}
			child, err = as.newTable()
		} else {
			child, err = as.own(pe & tableAddrMask)
		}
		if err != nil {
			return err
		}
		if err := as.ram.PutUint64(slot, child|dirFlags); err != nil {
			return err
		}
		table = child
	}
	return as.ram.PutUint64(table+entryIndex(va, level)*8, e)
}

// tableAt is the table of level on va's path, or 0 if there is none.
func (as *addressSpace) tableAt(va uint64, level int) (uint64, error) {
	table := as.root
	for l := 3; l > level; l-- {
		e, err := as.ram.Uint64(table + entryIndex(va, l)*8)
		if err != nil {
			return 0, err
		}
		if e&x86.PTEPresent == 0 {
			return 0, nil
		}
		table = e & tableAddrMask
	}
	return table, nil
}

// prune frees the tables below the root on va's path that hold no entry,
// from the leaf table up: what an unmap leaves of them.
func (as *addressSpace) prune(va uint64) error {
	for level := 0; level < 3; level++ {
		table, err := as.tableAt(va, level)
		if err != nil || table == 0 {
			return err
		}
		b, err := as.ram.Slice(table, pageSize)
		if err != nil {
			return err
		}
		for i := 0; i < pageSize; i += 8 {
			if binary.LittleEndian.Uint64(b[i:]) != 0 {
				return nil
			}
		}
		if err := as.setEntry(va, level+1, 0); err != nil {
			return err
		}
		as.retire(table)
	}
	return nil
}

// tablesFor bounds the tables a change to the entries of the pages vas
// (in order) can take: each on their paths copied or built, root included.
func tablesFor(vas []uint64) uint64 {
	n := uint64(1)
	for _, shift := range []uint{21, 30, 39} {
		for i, va := range vas {
			if i == 0 || va>>shift != vas[i-1]>>shift {
				n++
			}
		}
	}
	return n
}

// tablesForRange is tablesFor of every page of [start, end).
func tablesForRange(start, end uint64) uint64 {
	n := uint64(1)
	for _, shift := range []uint{21, 30, 39} {
		n += (end-1)>>shift - start>>shift + 1
	}
	return n
}

func leafFlags(p prot) uint64 {
	switch {
	case p == 0:
		return 0
	case p&protWrite != 0:
		return x86.PTEPresent | x86.PTEUser | x86.PTEWrite
	}
	return x86.PTEPresent | x86.PTEUser
}

// checkRange checks [start, start+length) is page-aligned user memory.
func checkRange(start, length uint64) (end uint64, ok bool) {
	end = start + length
	return end, start&pageMask == 0 && length > 0 && length&pageMask == 0 &&
		start >= minUserAddr && end <= maxUserAddr && end > start
}

// maxMapCount is Linux's vm.max_map_count: the ranges a process may
// have. As Linux counts them, neighbours with the same protection are one
// (Linux merges anonymous mappings so; a file mapping it would keep apart
// is counted with its neighbour here).
const maxMapCount = 65530

// errMapCount is a change that would leave more ranges than maxMapCount
// allows: ENOMEM.
var errMapCount = fmt.Errorf("more than %d mappings", maxMapCount)

// limits on the count of ranges a change may leave, as Linux checks them:
// a new mapping is refused only once there are more than maxMapCount; a
// split (mprotect, munmap) may not make more than maxMapCount.
const (
	mapLimit   = maxMapCount + 1
	splitLimit = maxMapCount
)

// mapRange maps [start, end) with p, giving every accessible page a frame
// (a page that had one keeps its contents), and records the range. Where
// the ranges or the frames fall short it changes nothing.
func (as *addressSpace) mapRange(start, end uint64, p prot) error {
	return as.setRange(start, end, p, mapLimit)
}

// setRange records [start, end) as mapped with p (within limit's count
// of ranges) and gives its pages p, undoing the first if the second falls
// short of frames.
func (as *addressSpace) setRange(start, end uint64, p prot, limit int) error {
	undo, err := as.respan(start, end, p, true, limit)
	if err != nil {
		return err
	}
	if err := as.protectPages(start, end, p); err != nil {
		undo()
		return err
	}
	return nil
}

// respan records [start, end) as mapped with p, or as not mapped, merging
// neighbours of the same protection; it fails rather than leave more than
// limit ranges where there were fewer. undo puts the ranges back.
func (as *addressSpace) respan(start, end uint64, p prot, mapped bool, limit int) (undo func(), err error) {
	i := sort.Search(len(as.vmas), func(i int) bool { return as.vmas[i].end >= start })
	j := i
	for j < len(as.vmas) && as.vmas[j].start <= end {
		j++
	}
	was := slices.Clone(as.vmas[i:j])
	out := make([]vma, 0, len(was)+2)
	add := func(v vma) {
		if n := len(out); n > 0 && out[n-1].end == v.start && out[n-1].prot == v.prot {
			out[n-1].end = v.end
			return
		}
		out = append(out, v)
	}
	for _, v := range was {
		if v.start < start {
			add(vma{v.start, min(v.end, start), v.prot})
		}
	}
	if mapped {
		add(vma{start, end, p})
	}
	for _, v := range was {
		if v.end > end {
			add(vma{max(v.start, end), v.end, v.prot})
		}
	}
	if n := len(as.vmas) - len(was) + len(out); n > limit && n > len(as.vmas) {
		return nil, errMapCount
	}
	as.vmas = slices.Replace(as.vmas, i, j, out...)
	return func() { as.vmas = slices.Replace(as.vmas, i, i+len(out), was...) }, nil
}

// protectPages sets the leaf entries of [start, end) for p. It takes the
// frames it needs only if there are enough for all, so it fails (no
// memory) having changed nothing.
func (as *addressSpace) protectPages(start, end uint64, p prot) error {
	flags := leafFlags(p)
	present := as.present(start, end)
	if flags == 0 {
		if tablesFor(present) > as.fr.available() {
			return errNoMemory
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
	if (end-start)/pageSize-uint64(len(present))+tablesForRange(start, end) > as.fr.available() {
		return errNoMemory
	}
	if p&protWrite != 0 {
		// A shared frame stays read-only until written (copy-on-write).
		for _, va := range present {
			if as.fr.holders(as.pages[va]) > 1 {
				as.cow[va] = true
			}
		}
	}
	for va := start; va < end; va += pageSize {
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
			f &^= x86.PTEWrite
		}
		if err := as.setPTE(va, pa|f); err != nil {
			return err
		}
	}
	return nil
}

// present are the mapped pages of [start, end), in order, found without
// walking a range far larger than what is mapped.
func (as *addressSpace) present(start, end uint64) []uint64 {
	var out []uint64
	if (end-start)/pageSize <= uint64(len(as.pages)) {
		for va := start; va < end; va += pageSize {
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

// protect changes the protection of the mapped pages of [start, end);
// it fails if part of the range is not mapped (ENOMEM in Linux).
func (as *addressSpace) protect(start, end uint64, p prot) error {
	if !as.covered(start, end) {
		return errUnmapped
	}
	return as.setRange(start, end, p, splitLimit)
}

var errUnmapped = fmt.Errorf("range not mapped")

// unmap removes [start, end), frees its frames, and frees the page tables
// it leaves empty. Short of frames for the tables it must copy, or of
// ranges for a split, it changes nothing.
func (as *addressSpace) unmap(start, end uint64) error {
	present := as.present(start, end)
	undo, err := as.respan(start, end, 0, false, splitLimit)
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
		return errNoMemory
	}
	as.carveFiles(start, end)
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
	for i, va := range present {
		if i == 0 || va>>21 != present[i-1]>>21 {
			if err := as.prune(va); err != nil {
				return err
			}
		}
	}
	return nil
}

// remap moves the range [from, from+n) to the free [to, to+size), its
// pages' frames with it, and maps the rest of it with p (mremap). Short of
// frames or ranges, it changes nothing.
func (as *addressSpace) remap(from, n, to, size uint64, p prot) error {
	present := as.present(from, from+n)
	need := tablesFor(present) + tablesForRange(to, to+size)
	if leafFlags(p) != 0 {
		need += (size - uint64(len(present))*pageSize) / pageSize
	}
	if need > as.fr.available() {
		return errNoMemory
	}
	undoOld, err := as.respan(from, from+n, 0, false, splitLimit)
	if err != nil {
		return err
	}
	if _, err := as.respan(to, to+size, p, true, mapLimit); err != nil {
		undoOld()
		return err
	}
	as.carveFiles(from, from+n)
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
	for i, va := range present {
		if i == 0 || va>>21 != present[i-1]>>21 {
			if err := as.prune(va); err != nil {
				return err
			}
		}
	}
	return as.protectPages(to, to+size, p)
}

// index is the range holding va, or -1.
func (as *addressSpace) index(va uint64) int {
	i := sort.Search(len(as.vmas), func(i int) bool { return as.vmas[i].end > va })
	if i == len(as.vmas) || as.vmas[i].start > va {
		return -1
	}
	return i
}

// covered reports whether every page of [start, end) is in some range.
func (as *addressSpace) covered(start, end uint64) bool {
	i := as.index(start)
	if i < 0 {
		return false
	}
	at := as.vmas[i].end
	for i++; at < end; i++ {
		if i == len(as.vmas) || as.vmas[i].start != at {
			return false
		}
		at = as.vmas[i].end
	}
	return true
}

// findFree returns the highest free range of length bytes below mmapTop.
func (as *addressSpace) findFree(length uint64) (uint64, bool) {
	top := uint64(mmapTop)
	below := sort.Search(len(as.vmas), func(i int) bool { return as.vmas[i].start >= top })
	for i := below - 1; i >= 0; i-- {
		v := as.vmas[i]
		if v.end <= top && top-v.end >= length {
			return top - length, true
		}
		top = min(top, v.start)
	}
	if top-minUserAddr >= length {
		return top - length, true
	}
	return 0, false
}

// free reports whether [start, end) overlaps no range.
func (as *addressSpace) free(start, end uint64) bool {
	i := sort.Search(len(as.vmas), func(i int) bool { return as.vmas[i].end > start })
	return i == len(as.vmas) || as.vmas[i].start >= end
}

// access copies between guest virtual memory and b, page by page, through
// the process's own mappings: a page that is not mapped, or not writable
// for a write, is EFAULT. The guest's page tables are not read back.
func (as *addressSpace) access(va uint64, b []byte, write bool) error {
	for len(b) > 0 {
		page := va &^ pageMask
		pa, ok := as.pages[page]
		if !ok || va < minUserAddr || !as.allows(page, write) {
			return errFault
		}
		n := min(uint64(len(b)), pageSize-(va&pageMask))
		if write && as.cow[page] {
			if err := as.breakCOW(page); err != nil {
				return err
			}
			pa = as.pages[page]
		}
		mem, err := as.ram.Slice(pa+(va&pageMask), n)
		if err != nil {
			return err
		}
		if write {
			copy(mem, b[:n])
		} else {
			copy(b[:n], mem)
		}
		b, va = b[n:], va+n
	}
	return nil
}

func (as *addressSpace) allows(page uint64, write bool) bool {
	i := as.index(page)
	if i < 0 {
		return false
	}
	p := as.vmas[i].prot
	return p&protRead != 0 && (!write || p&protWrite != 0)
}

var errFault = fmt.Errorf("bad address")

// load writes b at va whatever the pages' protection: the kernel filling
// a program's pages (its code, its initial stack).
func (as *addressSpace) load(va uint64, b []byte) error {
	for len(b) > 0 {
		pa, ok := as.pages[va&^pageMask]
		if !ok {
			return errFault
		}
		n := min(uint64(len(b)), pageSize-(va&pageMask))
		if err := as.ram.Write(pa+(va&pageMask), b[:n]); err != nil {
			return err
		}
		b, va = b[n:], va+n
	}
	return nil
}

func (as *addressSpace) read(va uint64, b []byte) error  { return as.access(va, b, false) }
func (as *addressSpace) write(va uint64, b []byte) error { return as.access(va, b, true) }

func (as *addressSpace) putUint64(va, v uint64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return as.write(va, b[:])
}

// readString reads a NUL-terminated string of at most max bytes.
func (as *addressSpace) readString(va uint64, max int) (string, error) {
	var out []byte
	var b [1]byte
	for len(out) < max {
		if err := as.read(va+uint64(len(out)), b[:]); err != nil {
			return "", err
		}
		if b[0] == 0 {
			return string(out), nil
		}
		out = append(out, b[0])
	}
	return "", errNameTooLong
}

var errNameTooLong = fmt.Errorf("string too long")

// zero clears the frames of the mapped pages of [start, end).
func (as *addressSpace) zero(start, end uint64) error {
	for _, va := range as.present(start, end) {
		if err := as.breakCOW(va); err != nil {
			return err
		}
		b, err := as.ram.Slice(as.pages[va], pageSize)
		if err != nil {
			return err
		}
		clear(b)
		as.fr.cleared(as.pages[va])
	}
	return nil
}

// release frees every frame of the address space: its pages, and its
// tables (retire). It is not used afterwards.
func (as *addressSpace) release() {
	for _, va := range as.pageAddrs() {
		as.fr.drop(as.pages[va])
	}
	for _, pa := range as.tables {
		if as.fresh[pa] {
			as.fr.release(pa)
		} else {
			as.fr.retire(pa)
		}
	}
	as.pages, as.vmas, as.tables = nil, nil, nil
}

// clone is a fork's copy of the address space: the same ranges over the
// same frames, a writable page of either mapped read-only until one of
// them writes it (copy-on-write; breakCOW).
func (as *addressSpace) clone() (*addressSpace, error) {
	c, err := newAddressSpace(as.ram, as.fr)
	if err != nil {
		return nil, err
	}
	c.vmas = append([]vma(nil), as.vmas...)
	c.files = append([]Mapping(nil), as.files...)
	for va, tsc := range as.tscSites {
		c.tscSites[va] = tsc
	}
	for _, va := range as.pageAddrs() {
		pa := as.pages[va]
		as.fr.share(pa)
		c.pages[va] = pa
	}
	for _, v := range as.vmas {
		if err := c.protectPages(v.start, v.end, v.prot); err != nil {
			c.release()
			return nil, err
		}
		if v.prot&protWrite == 0 {
			continue // the parent's read-only pages stay as they are
		}
		if err := as.protectPages(v.start, v.end, v.prot); err != nil {
			c.release()
			return nil, err
		}
	}
	return c, nil
}

// breakCOW gives a copy-on-write page a frame of its own, for a write the
// VMM makes (a system call's result, a signal frame): the new entry goes
// in as any other change does (setPTE, a new root). A translation the
// guest kept of the shared frame would otherwise stay: KVM's shadow of a
// published table does not see the VMM's writes, so the program would go
// on reading the frame it no longer owns — the old contents, then the
// other holder's writes.
func (as *addressSpace) breakCOW(va uint64) error {
	if as.cow[va] && 1+tablesFor([]uint64{va}) > as.fr.available() {
		return errNoMemory // before the frame changes under the entry
	}
	pa, err := as.ownFrame(va)
	if err != nil || pa == 0 {
		return err
	}
	return as.setPTE(va, pa|leafFlags(as.protAt(va)))
}

// breakCOWFault breaks copy-on-write for the program's own write that
// faulted, from the trap stub: the entry is rewritten in place, which
// needs no new root (the stub runs on the special registers as they are).
// The stale translation cannot be used: the write the stub goes back to
// faults into KVM on it, and KVM walks the tables again and finds this
// entry.
func (as *addressSpace) breakCOWFault(va uint64) error {
	pa, err := as.ownFrame(va)
	if err != nil || pa == 0 {
		return err
	}
	return as.upgradePTE(va, pa|leafFlags(as.protAt(va)))
}

// ownFrame gives the copy-on-write page at va a frame of its own — the
// shared one's copy, or the frame itself once no one else holds it — and
// returns it, or 0 if va is not copy-on-write. Mapping it writable is the
// caller's.
func (as *addressSpace) ownFrame(va uint64) (uint64, error) {
	if !as.cow[va] {
		return 0, nil
	}
	pa := as.pages[va]
	if as.fr.holders(pa) > 1 {
		cp, err := as.fr.alloc()
		if err != nil {
			return 0, err
		}
		from, err := as.ram.Slice(pa, pageSize)
		if err != nil {
			return 0, err
		}
		to, err := as.ram.Slice(cp, pageSize)
		if err != nil {
			return 0, err
		}
		copy(to, from)
		as.fr.copied(pa, cp)
		as.fr.drop(pa)
		as.pages[va], pa = cp, cp
	}
	delete(as.cow, va)
	return pa, nil
}

// upgradePTE rewrites the leaf entry of a mapped va in place with one that
// grants more (writable, maybe another frame of the same contents); only
// breakCOWFault may, for the reason it gives.
func (as *addressSpace) upgradePTE(va, pte uint64) error {
	table := as.root
	for level := 3; level > 0; level-- {
		e, err := as.ram.Uint64(table + ((va>>(12+9*uint(level)))&0x1ff)*8)
		if err != nil {
			return err
		}
		if e&x86.PTEPresent == 0 {
			return errFault
		}
		table = e & 0x000f_ffff_ffff_f000
	}
	return as.ram.PutUint64(table+((va>>12)&0x1ff)*8, pte)
}

// pageAddrs are the mapped pages' addresses in order: frames are taken
// and given back in this order, so where each page lands is the same in
// every replay (a map's order is not).
func (as *addressSpace) pageAddrs() []uint64 { return slices.Sorted(maps.Keys(as.pages)) }

// protAt is the protection of the range holding va (0 if none).
func (as *addressSpace) protAt(va uint64) prot {
	if i := as.index(va); i >= 0 {
		return as.vmas[i].prot
	}
	return 0
}
