package mm

import "encoding/binary"

// Accesses to a process's memory by the kernel, through the process's own
// mappings: the guest's page tables are not read back.

// access copies between guest virtual memory and b, page by page: a page
// that is not mapped, or not writable for a write, is ErrFault.
func (as *Space) access(va uint64, b []byte, write bool) error {
	for len(b) > 0 {
		page := va &^ PageMask
		n := min(uint64(len(b)), PageSize-(va&PageMask))
		pa, ok := as.pages[page]
		if !ok && va >= MinUserAddr && as.allows(page, write) && as.lazyAt(page) != nil {
			if !write { // untouched: zeros, and it stays untouched
				clear(b[:n])
				b, va = b[n:], va+n
				continue
			}
			if _, err := as.FaultIn(page); err != nil {
				return err
			}
			pa, ok = as.pages[page]
		}
		if !ok || va < MinUserAddr || !as.allows(page, write) {
			return ErrFault
		}
		if write && as.cow[page] {
			if err := as.breakCOW(page); err != nil {
				return err
			}
			pa = as.pages[page]
		}
		mem, err := as.ram.Slice(pa+(va&PageMask), n)
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

// allows reports whether the page's range grants reading, and writing if
// write.
func (as *Space) allows(page uint64, write bool) bool {
	p := as.ProtAt(page)
	return p&ProtRead != 0 && (!write || p&ProtWrite != 0)
}

// Read reads b from va, as the program could.
func (as *Space) Read(va uint64, b []byte) error { return as.access(va, b, false) }

// Write writes b at va, as the program could: a copy-on-write page gets
// its own frame first.
func (as *Space) Write(va uint64, b []byte) error { return as.access(va, b, true) }

// PutUint64 writes a little-endian word at va.
func (as *Space) PutUint64(va, v uint64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return as.Write(va, b[:])
}

// Uint64 reads a little-endian word at va.
func (as *Space) Uint64(va uint64) (uint64, error) {
	var b [8]byte
	if err := as.Read(va, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// ReadString reads a NUL-terminated string of at most max bytes.
func (as *Space) ReadString(va uint64, max int) (string, error) {
	var out []byte
	var b [1]byte
	for len(out) < max {
		if err := as.Read(va+uint64(len(out)), b[:]); err != nil {
			return "", err
		}
		if b[0] == 0 {
			return string(out), nil
		}
		out = append(out, b[0])
	}
	return "", ErrNameTooLong
}

// Load writes b at va whatever the pages' protection: the kernel filling
// a program's pages (its code, its initial stack).
func (as *Space) Load(va uint64, b []byte) error {
	for len(b) > 0 {
		if _, err := as.FaultIn(va &^ PageMask); err != nil {
			return err
		}
		pa, ok := as.pages[va&^PageMask]
		if !ok {
			return ErrFault
		}
		n := min(uint64(len(b)), PageSize-(va&PageMask))
		if err := as.ram.Write(pa+(va&PageMask), b[:n]); err != nil {
			return err
		}
		b, va = b[n:], va+n
	}
	return nil
}

// Zero clears the frames of the mapped private pages of [start, end)
// (MADV_DONTNEED); a shared mapping's keep their contents, as Linux's
// page cache and shmem do.
func (as *Space) Zero(start, end uint64) error {
	for _, va := range as.present(start, end) {
		if as.vmaAt(va).Obj != nil {
			continue
		}
		if err := as.breakCOW(va); err != nil {
			return err
		}
		b, err := as.ram.Slice(as.pages[va], PageSize)
		if err != nil {
			return err
		}
		clear(b)
		as.fr.cleared(as.pages[va])
	}
	return nil
}
