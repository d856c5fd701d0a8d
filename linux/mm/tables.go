package mm

import "encoding/binary"

// The page tables are never changed in place once the guest may have
// walked them: where KVM shadows guest page tables (PVM hosts: shadow
// paging), it keeps a shadow per table frame and learns of changes only
// from the guest's own writes, which it write-protects; the VMM's writes
// from the host go unseen, and a reused or rewritten table would be
// walked through a stale shadow. So a change copies the tables on its
// path to frames that have not been tables since KVM last dropped its
// shadows, up to a new root (the new CR3), and the tables it replaced are
// not tables again until KVM has dropped its shadows (Frames.retired).
// Tables built since the last time the guest ran are fresh and change in
// place. A table left empty by an unmap goes too, as Linux frees it.
// (With EPT the guest walks its tables itself, and the new CR3 is the TLB
// flush.)

// Directory entries grant everything; permissions are decided at the leaf.
//
// Directory entries and the system area's pages are marked accessed (and
// the latter dirty) from the start: the CPU sets those bits when it first
// walks or writes through an entry, and a replay's breakpoints make it
// walk and write where its recording did not (the trap stubs, the
// descriptor tables, the debug stack). Set beforehand, they never change.
const dirFlags = ptePresent | pteWrite | pteUser | pteAccessed

const tableAddrMask = 0x000f_ffff_ffff_f000

// CR3 is the page-table root the guest must run on.
func (as *Space) CR3() uint64 { return as.root }

// Published marks every table as walked by the guest: the guest is about
// to run on CR3. Later changes copy them.
func (as *Space) Published() { clear(as.fresh) }

// newTable is a zeroed page-table frame no shadow KVM keeps was made of.
func (as *Space) newTable() (uint64, error) {
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
func (as *Space) own(pa uint64) (uint64, error) {
	if as.fresh[pa] {
		return pa, nil
	}
	cp, err := as.newTable()
	if err != nil {
		return 0, err
	}
	if err := as.copyFrame(pa, cp); err != nil {
		return 0, err
	}
	as.retire(pa)
	return cp, nil
}

// copyFrame copies frame from to frame to.
func (as *Space) copyFrame(from, to uint64) error {
	src, err := as.ram.Slice(from, PageSize)
	if err != nil {
		return err
	}
	dst, err := as.ram.Slice(to, PageSize)
	if err != nil {
		return err
	}
	copy(dst, src)
	return nil
}

// retire drops a table no longer in use: one the guest never walked is
// free at once, one it may have waits for KVM to drop its shadows.
func (as *Space) retire(pa uint64) {
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
func (as *Space) setPTE(va, pte uint64) error { return as.setEntry(va, 0, pte) }

// entryIndex is the slot of va in a table of level (0 the leaf table, 3
// the root).
func entryIndex(va uint64, level int) uint64 { return (va >> (12 + 9*uint(level))) & 0x1ff }

// setEntry writes va's entry in its table of level, copying the tables on
// the path there that the guest has run on, and building missing ones.
func (as *Space) setEntry(va uint64, level int, e uint64) error {
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
		if pe&ptePresent == 0 {
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

// setLeaf writes va's leaf entry pte: in place where the entry there
// grants no more than pte (widens) and the policy allows it
// (Policy.WidenInPlace), else as setPTE does.
func (as *Space) setLeaf(va, pte uint64) error {
	if as.fr.policy.WidenInPlace {
		if done, err := as.widenPTE(va, pte); done || err != nil {
			return err
		}
	}
	return as.setPTE(va, pte)
}

// widens reports whether leaf entry pte may replace old in tables the guest
// has walked without copying them: old maps nothing, or pte maps its frame
// granting all it granted and more. A shadowing KVM's copy of old then
// grants no more than pte, so the first access pte allows and old did not
// faults into KVM, which walks the tables again and finds pte; a CPU does
// not cache an entry that is not present. Any other change (a narrower
// entry, another frame) must go in as setPTE puts it, with a new root.
func widens(old, pte uint64) bool {
	if old&ptePresent == 0 {
		return true
	}
	const rights = pteWrite | pteUser | pteAccessed | pteDirty
	return pte&ptePresent != 0 && old&^rights == pte&^rights && old&rights&^pte == 0
}

// widenPTE writes va's leaf entry pte in place, building in place the
// tables its path lacks, if the entry there widens to it (widens); it
// reports whether it did, and changes nothing if not.
func (as *Space) widenPTE(va, pte uint64) (bool, error) {
	table := as.root
	for level := 3; level > 0; level-- {
		slot := table + entryIndex(va, level)*8
		e, err := as.ram.Uint64(slot)
		if err != nil {
			return false, err
		}
		if e&ptePresent == 0 {
			t, err := as.tableUnder(table)
			if err != nil {
				return false, err
			}
			if err := as.ram.PutUint64(slot, t|dirFlags); err != nil {
				return false, err
			}
			e = t | dirFlags
		}
		table = e & tableAddrMask
	}
	slot := table + entryIndex(va, 0)*8
	old, err := as.ram.Uint64(slot)
	if err != nil || !widens(old, pte) {
		return false, err
	}
	return true, as.ram.PutUint64(slot, pte)
}

// tableUnder is a new table for an entry of parent, written in place:
// fresh under a fresh parent, which the guest cannot reach yet (but as
// personality 12 built them, for its replays: Policy.WidenInPlace).
func (as *Space) tableUnder(parent uint64) (uint64, error) {
	if as.fresh[parent] && as.fr.policy.WidenInPlace {
		return as.newTable()
	}
	t, err := as.fr.alloc()
	if err != nil {
		return 0, err
	}
	as.tables = append(as.tables, t)
	return t, nil
}

// tableAt is the table of level on va's path, or 0 if there is none.
func (as *Space) tableAt(va uint64, level int) (uint64, error) {
	table := as.root
	for l := 3; l > level; l-- {
		e, err := as.ram.Uint64(table + entryIndex(va, l)*8)
		if err != nil {
			return 0, err
		}
		if e&ptePresent == 0 {
			return 0, nil
		}
		table = e & tableAddrMask
	}
	return table, nil
}

// Leaf is va's page-table entry in the tables the guest runs on, 0 if
// none.
func (as *Space) Leaf(va uint64) (uint64, error) {
	table, err := as.tableAt(va, 0)
	if err != nil || table == 0 {
		return 0, err
	}
	return as.ram.Uint64(table + entryIndex(va, 0)*8)
}

// prune frees the tables below the root on va's path that hold no entry,
// from the leaf table up: what an unmap leaves of them.
func (as *Space) prune(va uint64) error {
	for level := 0; level < 3; level++ {
		table, err := as.tableAt(va, level)
		if err != nil || table == 0 {
			return err
		}
		b, err := as.ram.Slice(table, PageSize)
		if err != nil {
			return err
		}
		for i := 0; i < PageSize; i += 8 {
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

// upgradePTE rewrites the leaf entry of a mapped va in place with one that
// grants more (writable, maybe another frame of the same contents); only
// BreakCOWFault may, for the reason it gives.
func (as *Space) upgradePTE(va, pte uint64) error {
	table := as.root
	for level := 3; level > 0; level-- {
		e, err := as.ram.Uint64(table + entryIndex(va, level)*8)
		if err != nil {
			return err
		}
		if e&ptePresent == 0 {
			return ErrFault
		}
		table = e & tableAddrMask
	}
	return as.ram.PutUint64(table+entryIndex(va, 0)*8, pte)
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
