// Package symtab is a guest image's symbol table: symbols sorted by
// address, resolved to "symbol+offset". The image reader builds one from
// the ELF file, and the event DB keeps one so that tools name addresses
// from the DB alone; both use this one implementation.
package symtab

import (
	"cmp"
	"fmt"
	"slices"
)

// Symbol is a function or object symbol.
type Symbol struct {
	Name string
	Addr uint64
	Size uint64 // 0: unknown (an asm label: it extends to the next symbol)
	Func bool
}

// Table is a symbol table sorted by address. Its methods do not change
// it, so it may be shared.
type Table struct {
	syms   []Symbol
	byName map[string]int // the lowest-addressed symbol of each name
}

// New builds a table from syms, which need not be sorted; symbols at one
// address keep their order.
func New(syms []Symbol) *Table {
	s := slices.Clone(syms)
	slices.SortStableFunc(s, func(a, b Symbol) int { return cmp.Compare(a.Addr, b.Addr) })
	t := &Table{syms: s, byName: make(map[string]int, len(s))}
	for i, sym := range s {
		if _, dup := t.byName[sym.Name]; !dup {
			t.byName[sym.Name] = i
		}
	}
	return t
}

// All returns the symbols in address order; the caller must not change them.
func (t *Table) All() []Symbol { return t.syms }

// Lookup finds a symbol by name (the lowest-addressed, if several share it).
func (t *Table) Lookup(name string) (Symbol, bool) {
	i, ok := t.byName[name]
	if !ok {
		return Symbol{}, false
	}
	return t.syms[i], true
}

// Resolve maps addr to the nearest symbol at or below it and the offset
// into it. A sized symbol covers [Addr, Addr+Size); an unsized one covers
// everything up to the next symbol.
func (t *Table) Resolve(addr uint64) (Symbol, uint64, bool) {
	i, _ := slices.BinarySearchFunc(t.syms, addr+1, func(s Symbol, a uint64) int {
		if s.Addr < a {
			return -1
		}
		return 1
	})
	if i--; i < 0 {
		return Symbol{}, 0, false
	}
	s := t.syms[i]
	if s.Size != 0 && addr >= s.Addr+s.Size {
		return Symbol{}, 0, false
	}
	return s, addr - s.Addr, true
}

// Describe names addr as "symbol", "symbol+0x12", or hex when no symbol
// holds it.
func (t *Table) Describe(addr uint64) string {
	if s, off, ok := t.Resolve(addr); ok {
		if off == 0 {
			return s.Name
		}
		return fmt.Sprintf("%s+%#x", s.Name, off)
	}
	return fmt.Sprintf("%#x", addr)
}

// Function names the function holding addr, or hex when none does.
func (t *Table) Function(addr uint64) string {
	if s, _, ok := t.Resolve(addr); ok && s.Func {
		return s.Name
	}
	return fmt.Sprintf("%#x", addr)
}
