package mm

import (
	"errors"
	"fmt"
)

// Pages that get their frames when first touched (MapLazy). A program's
// stack is 8 MiB, of which it uses a few pages: given every frame when
// mapped, each exec took 2048 frames, zeroed, and each fork shared and
// marked them all. A lazy page has no frame and no entry; the program's
// first access faults, the kernel calls FaultIn, and the access runs
// again. The VMM's own reads of an untouched page see zeros and leave it
// untouched; its writes fault it in first.
//
// The entry goes in place, with any table its path lacks: it was not
// present, so KVM's shadow of it is not present either, and the access
// that runs again faults into KVM, which walks the tables again and finds
// it — the reasoning that lets BreakCOWFault upgrade an entry in place,
// and the way no new root (a TLB flush, four tables retired) is needed
// for a page the program touches.

// lazyAt is the range of va, a page with no frame, if its frame comes when
// it is touched; nil otherwise.
func (as *Space) lazyAt(va uint64) *VMA {
	if _, ok := as.pages[va]; ok {
		return nil
	}
	if v := as.vmaAt(va); v != nil && v.Lazy && v.Prot != 0 {
		return v
	}
	return nil
}

// FaultIn gives the page at va (page-aligned) a zeroed frame if it is an
// untouched page of a lazy range, and reports whether it did; short of
// frames, it changes nothing and returns ErrNoMemory.
func (as *Space) FaultIn(va uint64) (bool, error) {
	v := as.lazyAt(va)
	if v == nil {
		return false, nil
	}
	if 1+tablesFor([]uint64{va}) > as.fr.available() {
		return false, ErrNoMemory
	}
	pa, err := as.fr.alloc()
	if err != nil {
		return false, err
	}
	if err := as.fillPTE(va, pa|as.fr.leafFlags(v.Prot)); err != nil {
		as.fr.release(pa)
		return false, err
	}
	as.pages[va] = pa
	return true, nil
}

// fillPTE writes the leaf entry of va, which holds nothing, in place in
// the tables the guest runs on (widenPTE).
func (as *Space) fillPTE(va, pte uint64) error {
	if e, err := as.Leaf(va); err != nil || e != 0 {
		return errors.Join(err, fmt.Errorf("mm: filling the entry of %#x, which holds %#x", va, e))
	}
	_, err := as.widenPTE(va, pte)
	return err
}
