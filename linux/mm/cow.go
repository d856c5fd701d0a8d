package mm

// Copy-on-write: a fork's child gets the parent's frames, shared, each
// writable private page of either mapped read-only until one of them
// writes it; the shared mappings' pages stay writable by both. A space
// with few writable private pages has them copied at the fork instead
// (Policy.CopyAtFork).

// Clone is a fork's copy of the address space: the same ranges over the
// same frames, a writable private page of either mapped read-only until
// one of them writes it (copy-on-write; BreakCOW) — or, up to
// Policy.CopyAtFork of them, the child's copied now and the parent's left
// as they are. cow says whether the parent's entries changed, which a
// shadowing KVM does not see (Machine.DropTranslations).
func (as *Space) Clone() (c *Space, cow bool, err error) {
	c, err = New(as.fr)
	if err != nil {
		return nil, false, err
	}
	if as.callPage {
		if err := c.OpenCallPage(); err != nil {
			c.Release()
			return nil, false, err
		}
	}
	c.vmas = as.vmas.clone()
	c.files = as.files.clone()
	for va, n := range as.sites {
		c.sites[va] = n
	}
	// The child maps the shared objects as the parent does: counted
	// first, so that a Release on failure below uncounts what was counted.
	for o, n := range as.objectPages(0, MaxUserAddr) {
		o.mapped += n
	}
	private := as.privateWritable()
	cow = len(private) > 0 && !as.fr.copiesAtFork(len(private))
	if !cow {
		for _, va := range private { // in address order, as frames are taken
			pa := as.pages[va]
			cp, err := as.fr.alloc()
			if err == nil {
				c.pages[va] = cp // the child's, which Release frees
				err = as.copyFrame(pa, cp)
			}
			if err != nil {
				c.Release()
				return nil, false, err
			}
			as.fr.copied(pa, cp)
		}
	}
	for _, va := range as.pageAddrs() {
		if _, copied := c.pages[va]; !copied {
			as.fr.share(as.pages[va])
			c.pages[va] = as.pages[va]
		}
	}
	for _, v := range as.vmas.list {
		if err := c.protectPages(v.Start, v.End, v.Prot); err != nil {
			c.Release()
			return nil, false, err
		}
		if !cow || v.Prot&ProtWrite == 0 {
			continue // the parent's pages stay as they are
		}
		if err := as.protectPages(v.Start, v.End, v.Prot); err != nil {
			c.Release()
			return nil, false, err
		}
	}
	return c, cow, nil
}

// privateWritable are the pages with frames in writable private ranges,
// in address order: those a fork shares copy-on-write, or copies.
func (as *Space) privateWritable() []uint64 {
	var out []uint64
	for _, v := range as.vmas.list {
		if v.Prot&ProtWrite != 0 && v.Obj == nil {
			out = append(out, as.present(v.Start, v.End)...)
		}
	}
	return out
}

// breakCOW gives a copy-on-write page a frame of its own, for a write the
// VMM makes (a system call's result, a signal frame): the new entry goes
// in as any other change does (setPTE, a new root). A translation the
// guest kept of the shared frame would otherwise stay: KVM's shadow of a
// published table does not see the VMM's writes, so the program would go
// on reading the frame it no longer owns — the old contents, then the
// other holder's writes.
func (as *Space) breakCOW(va uint64) error {
	if as.cow[va] && 1+tablesFor([]uint64{va}) > as.fr.available() {
		return ErrNoMemory // before the frame changes under the entry
	}
	pa, err := as.ownFrame(va)
	if err != nil || pa == 0 {
		return err
	}
	return as.setPTE(va, pa|as.fr.leafFlags(as.ProtAt(va)))
}

// BreakCOWFault breaks copy-on-write for the program's own write that
// faulted, from the trap stub: the entry is rewritten in place, which
// needs no new root (the stub runs on the special registers as they are).
// The stale translation cannot be used: the write the stub goes back to
// faults into KVM on it, and KVM walks the tables again and finds this
// entry.
func (as *Space) BreakCOWFault(va uint64) error {
	pa, err := as.ownFrame(va)
	if err != nil || pa == 0 {
		return err
	}
	return as.upgradePTE(va, pa|as.fr.leafFlags(as.ProtAt(va)))
}

// ownFrame gives the copy-on-write page at va a frame of its own — the
// shared one's copy, or the frame itself once no one else holds it — and
// returns it, or 0 if va is not copy-on-write. Mapping it writable is the
// caller's.
func (as *Space) ownFrame(va uint64) (uint64, error) {
	if !as.cow[va] {
		return 0, nil
	}
	pa := as.pages[va]
	if as.fr.holders(pa) > 1 {
		cp, err := as.fr.alloc()
		if err != nil {
			return 0, err
		}
		if err := as.copyFrame(pa, cp); err != nil {
			return 0, err
		}
		as.fr.copied(pa, cp)
		as.fr.drop(pa)
		as.pages[va], pa = cp, cp
	}
	delete(as.cow, va)
	return pa, nil
}
