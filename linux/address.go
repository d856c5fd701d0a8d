package linux

import (
	"encoding/binary"
	"fmt"
	"github.com/reprise-vm/reprise/abi"
	"maps"
	"slices"
	"sort"

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
// path to fresh frames — never used before, by anything — up to a new
// root (the new CR3), and the tables it replaced are never tables again.
// Tables built since the last time the guest ran are fresh and change in
// place. (With EPT the guest walks its tables itself, and the new CR3 is
// the TLB flush.)
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

// newTable is a page-table frame that has never been used.
func (as *addressSpace) newTable() (uint64, error) {
	pa, err := as.fr.allocTable()
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

// retire drops a replaced table: its frame holds data from now on, never
// a table.
func (as *addressSpace) retire(pa uint64) {
	for i, t := range as.tables {
		if t == pa {
			as.tables = append(as.tables[:i], as.tables[i+1:]...)
			break
		}
	}
	as.fr.release(pa)
}

// setPTE writes the leaf entry of va, copying the tables on its path that
// the guest has run on, and building missing ones.
func (as *addressSpace) setPTE(va, pte uint64) error {
	root, err := as.own(as.root)
	if err != nil {
		return err
	}
	as.root = root
	table := root
	for level := 3; level > 0; level-- {
		slot := table + ((va>>(12+9*uint(level)))&0x1ff)*8
		e, err := as.ram.Uint64(slot)
		if err != nil {
			return err
		}
		var child uint64
		if e&x86.PTEPresent == 0 {
			if pte == 0 {
				return nil // nothing mapped here to remove
			}
			child, err = as.newTable()
		} else {
			child, err = as.own(e & 0x000f_ffff_ffff_f000)
		}
		if err != nil {
			return err
		}
		if err := as.ram.PutUint64(slot, child|dirFlags); err != nil {
			return err
		}
		table = child
	}
	return as.ram.PutUint64(table+((va>>12)&0x1ff)*8, pte)
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

// mapRange maps [start, end) with p, giving every accessible page a frame
// (a page that had one keeps its contents), and records the range.
func (as *addressSpace) mapRange(start, end uint64, p prot) error {
	as.carve(start, end)
	as.vmas = append(as.vmas, vma{start, end, p})
	sort.Slice(as.vmas, func(i, j int) bool { return as.vmas[i].start < as.vmas[j].start })
	return as.protectPages(start, end, p)
}

// protectPages sets the leaf entries of [start, end) for p.
func (as *addressSpace) protectPages(start, end uint64, p prot) error {
	flags := leafFlags(p)
	present := as.present(start, end)
	if flags == 0 {
		for _, va := range present {
			if err := as.setPTE(va, as.pages[va]); err != nil {
				return err
			}
		}
		return nil
	}
	if p&protWrite != 0 {
		// A shared frame stays read-only until written (copy-on-write).
		for _, va := range present {
			if as.fr.holders(as.pages[va]) > 1 {
				as.cow[va] = true
			}
		}
	}
	// Every page needs a frame: refuse what RAM cannot hold before
	// taking any (the range is the program's to choose).
	if (end-start)/pageSize-uint64(len(present)) > as.fr.available() {
		return errNoMemory
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
	as.carve(start, end)
	as.vmas = append(as.vmas, vma{start, end, p})
	sort.Slice(as.vmas, func(i, j int) bool { return as.vmas[i].start < as.vmas[j].start })
	return as.protectPages(start, end, p)
}

var errUnmapped = fmt.Errorf("range not mapped")

// unmap removes [start, end) and frees its frames.
func (as *addressSpace) unmap(start, end uint64) error {
	as.carve(start, end)
	as.carveFiles(start, end)
	for _, va := range as.present(start, end) {
		pa := as.pages[va]
		delete(as.pages, va)
		delete(as.cow, va)
		as.fr.drop(pa)
		if err := as.setPTE(va, 0); err != nil {
			return err
		}
	}
	return nil
}

// carve removes [start, end) from the recorded ranges, splitting those it
// cuts.
func (as *addressSpace) carve(start, end uint64) {
	out := as.vmas[:0:0]
	for _, v := range as.vmas {
		if v.end <= start || v.start >= end {
			out = append(out, v)
			continue
		}
		if v.start < start {
			out = append(out, vma{v.start, start, v.prot})
		}
		if v.end > end {
			out = append(out, vma{end, v.end, v.prot})
		}
	}
	as.vmas = out
}

// covered reports whether every page of [start, end) is in some range.
func (as *addressSpace) covered(start, end uint64) bool {
	at := start
	for _, v := range as.vmas {
		if v.end <= at {
			continue
		}
		if v.start > at {
			return false
		}
		at = v.end
		if at >= end {
			return true
		}
	}
	return at >= end
}

// findFree returns the highest free range of length bytes below mmapTop.
func (as *addressSpace) findFree(length uint64) (uint64, bool) {
	top := uint64(mmapTop)
	for i := len(as.vmas) - 1; i >= 0; i-- {
		v := as.vmas[i]
		if v.start >= top {
			continue
		}
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
	for _, v := range as.vmas {
		if v.start < end && v.end > start {
			return false
		}
	}
	return true
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
	i := sort.Search(len(as.vmas), func(i int) bool { return as.vmas[i].end > page })
	if i == len(as.vmas) || as.vmas[i].start > page {
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
// tables, which hold data from now on. It is not used afterwards.
func (as *addressSpace) release() {
	for _, va := range as.pageAddrs() {
		as.fr.drop(as.pages[va])
	}
	for _, pa := range as.tables {
		as.fr.release(pa)
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
	for _, v := range as.vmas {
		if va >= v.start && va < v.end {
			return v.prot
		}
	}
	return 0
}
