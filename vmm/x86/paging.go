// Package x86 builds the long-mode environment the VMM hands the guest
// kernel: identity page tables, GDT, TSS (with I/O bitmap and IST stacks)
// and IDT, all at the fixed addresses of package abi, and the special
// registers that switch them on. No firmware and no real mode: the vCPU's
// first instruction is the kernel's 64-bit entry point.
package x86

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/vmm/memory"
)

// Page-table entry bits.
const (
	PTEPresent  = 1 << 0
	PTEWrite    = 1 << 1
	PTEUser     = 1 << 2
	PTELarge    = 1 << 7 // 2 MiB page in a PD entry
	pteAddrMask = 0x000f_ffff_ffff_f000
)

const (
	page4K = 4 << 10
	page2M = 2 << 20
	page1G = 1 << 30
)

// systemPagePerms gives the few pages of the first 2 MiB that user code may
// touch; every other system page is supervisor-only and page 0 is absent so
// a null dereference faults.
var systemPagePerms = map[uint64]uint64{
	abi.Clock: PTEPresent | PTEUser,
	abi.SWBC:  PTEPresent | PTEWrite | PTEUser,
}

// BuildPageTables writes an identity map of all of RAM: 4 KiB pages for the
// system area below 2 MiB, a supervisor 2 MiB page for the kernel window
// [2 MiB, 4 MiB), and user 2 MiB pages from abi.UserBase to the end.
func BuildPageTables(ram *memory.RAM) error {
	size := ram.Size()
	if err := abi.CheckRAMSize(size); err != nil {
		return fmt.Errorf("x86: %w", err)
	}
	put := func(gpa, v uint64) error { return ram.PutUint64(gpa, v) }
	const dir = PTEPresent | PTEWrite | PTEUser // permissions are decided at the leaves
	if err := put(abi.PML4, abi.PDPT|dir); err != nil {
		return err
	}
	for gb := uint64(0); gb*page1G < size; gb++ {
		if err := put(abi.PDPT+gb*8, (abi.PD+gb*page4K)|dir); err != nil {
			return err
		}
	}
	if err := put(abi.PD, abi.PT0|dir); err != nil {
		return err
	}
	for p := uint64(page4K); p < page2M; p += page4K {
		perm, ok := systemPagePerms[p]
		switch {
		case ok:
		case p >= abi.ProbeArea && p < abi.ProbeArea+abi.ProbeAreaSize:
			perm = PTEPresent | PTEUser // the same in every run, live, recorded or replayed; used only by replays with probes
		default:
			perm = PTEPresent | PTEWrite
		}
		if err := put(abi.PT0+(p/page4K)*8, p|perm); err != nil {
			return err
		}
	}
	for a := uint64(page2M); a < size; a += page2M {
		perm := uint64(PTEPresent | PTEWrite | PTELarge)
		if a >= abi.UserBase {
			perm |= PTEUser
		}
		if err := put(abi.PD+(a/page2M)*8, a|perm); err != nil {
			return err
		}
	}
	return nil
}

// BuildCounterRegion maps the register branch counter's countdown region
// (abi.CounterBase): its guard page to abi.CounterGuard, every other page
// to the read-only zero frame, through tables that name each other
// (see abi.CounterTables). It needs the identity map's PML4 in place.
func BuildCounterRegion(ram *memory.RAM) error {
	const (
		pdpt    = abi.CounterTables
		guardPD = pdpt + page4K
		pd      = pdpt + 2*page4K
		guardPT = pdpt + 3*page4K
		pt      = pdpt + 4*page4K
		// Accessed is set ahead: which pages the walker would mark
		// depends on where r15 was placed, which differs between a
		// recording and its replays, and the tables are guest RAM.
		dir  = PTEPresent | PTEWrite | PTEUser | PTEAccessed
		leaf = PTEPresent | PTEUser | PTEAccessed // read-only: a count loads nothing but zero
	)
	put := func(gpa, v uint64) error { return ram.PutUint64(gpa, v) }
	const slot = uint64(abi.CounterBase>>39) & 0x1ff
	if err := put(abi.PML4+slot*8, pdpt|dir); err != nil {
		return err
	}
	if err := ram.Write(abi.CounterZero, make([]byte, page4K)); err != nil {
		return err
	}
	for i := uint64(0); i < 512; i++ {
		entries := [][2]uint64{
			{pdpt + i*8, pd | dir}, {guardPD + i*8, pt | dir}, {pd + i*8, pt | dir},
			{guardPT + i*8, abi.CounterZero | leaf}, {pt + i*8, abi.CounterZero | leaf},
		}
		if i == 0 { // the guard's own path
			entries[0][1], entries[1][1], entries[3][1] = guardPD|dir, guardPT|dir, abi.CounterGuard|leaf
		}
		for _, e := range entries {
			if err := put(e[0], e[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// ErrNotMapped is returned by Walk for an address with no valid mapping.
var ErrNotMapped = errors.New("x86: address not mapped")

// Mapping is the result of a page walk.
type Mapping struct {
	GPA   uint64
	Write bool // writable at every level
	User  bool // user-accessible at every level
}

// Walk translates a guest-virtual address through the 4-level page tables
// rooted at cr3, reading them from guest RAM with bounds checks (the tables
// are guest-controlled data).
func Walk(ram *memory.RAM, cr3, gva uint64) (Mapping, error) {
	m := Mapping{Write: true, User: true}
	table := cr3 & pteAddrMask
	for level := 3; level >= 0; level-- {
		idx := (gva >> (12 + 9*uint(level))) & 0x1ff
		raw, err := ram.Slice(table+idx*8, 8)
		if err != nil {
			return m, fmt.Errorf("x86: walking %#x: level %d table: %w", gva, level+1, err)
		}
		e := binary.LittleEndian.Uint64(raw)
		if e&PTEPresent == 0 {
			return m, fmt.Errorf("%w: %#x (level %d entry %#x)", ErrNotMapped, gva, level+1, e)
		}
		m.Write = m.Write && e&PTEWrite != 0
		m.User = m.User && e&PTEUser != 0
		if level == 0 || (level <= 2 && e&PTELarge != 0) {
			span := uint64(1) << (12 + 9*uint(level))
			m.GPA = (e & pteAddrMask &^ (span - 1)) | (gva & (span - 1))
			return m, nil
		}
		table = e & pteAddrMask
	}
	panic("unreachable")
}

// Accessed and dirty bits the CPU sets in page-table entries.
const (
	PTEAccessed = 1 << 5
	PTEDirty    = 1 << 6
)

// ClearAccessed clears the accessed and dirty bits of the 4 KiB system-area
// pages in [lo, hi): guest-visible marks the CPU leaves on pages that a
// replay touches and its recording did not (the probe area, the #BP stack).
func ClearAccessed(ram *memory.RAM, lo, hi uint64) error {
	if hi > page2M || lo > hi {
		return fmt.Errorf("x86: [%#x, %#x) is not inside the system area's 4 KiB pages", lo, hi)
	}
	for p := lo &^ (page4K - 1); p < hi; p += page4K {
		gpa := uint64(abi.PT0) + (p/page4K)*8
		e, err := ram.Uint64(gpa)
		if err != nil {
			return err
		}
		if err := ram.PutUint64(gpa, e&^(PTEAccessed|PTEDirty)); err != nil {
			return err
		}
	}
	return nil
}
