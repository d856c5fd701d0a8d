package eventdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// Symbol is a symbol of the recorded guest image. The DB keeps the image's
// symbol table so that tools name addresses from the DB alone.
type Symbol struct {
	Name string
	Addr uint64
	Size uint64 // 0: unknown (the symbol extends to the next one)
	Func bool
}

// Symbols is a guest image's symbol table, sorted by address.
type Symbols struct {
	Image string // what identifies the image, e.g. its SHA-256
	syms  []Symbol
}

// NewSymbols builds a table; syms need not be sorted.
func NewSymbols(image string, syms []Symbol) *Symbols {
	s := slices.Clone(syms)
	slices.SortStableFunc(s, func(a, b Symbol) int {
		switch {
		case a.Addr < b.Addr:
			return -1
		case a.Addr > b.Addr:
			return 1
		}
		return 0
	})
	return &Symbols{Image: image, syms: s}
}

// All returns the symbols in address order; the caller must not change them.
func (t *Symbols) All() []Symbol { return t.syms }

// Resolve maps addr to the symbol containing it and the offset into it: the
// nearest symbol at or below addr, unless addr is past its known size.
func (t *Symbols) Resolve(addr uint64) (Symbol, uint64, bool) {
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
func (t *Symbols) Describe(addr uint64) string {
	if s, off, ok := t.Resolve(addr); ok {
		if off == 0 {
			return s.Name
		}
		return fmt.Sprintf("%s+%#x", s.Name, off)
	}
	return fmt.Sprintf("%#x", addr)
}

// Function names the function holding addr, or hex when none does.
func (t *Symbols) Function(addr uint64) string {
	if s, _, ok := t.Resolve(addr); ok && s.Func {
		return s.Name
	}
	return fmt.Sprintf("%#x", addr)
}

// SetSymbols stores the guest image's symbol table. A DB holds one
// recording, so one image: storing a table for another image fails.
func (db *DB) SetSymbols(t *Symbols) error {
	if err := db.writable(); err != nil {
		return err
	}
	old, err := db.Symbols()
	switch {
	case err == nil && old.Image != t.Image:
		return fmt.Errorf("eventdb: %s holds events of guest image %s, not %s: use one DB per recording", db.dir, old.Image, t.Image)
	case err == nil:
		return nil
	case !errors.Is(err, ErrNoSymbols):
		return err
	}
	v := []byte{codec.SchemaVersion}
	v = codec.AppendString(v, t.Image)
	v = binary.AppendUvarint(v, uint64(len(t.syms)))
	for _, s := range t.syms {
		v = codec.AppendString(v, s.Name)
		v = binary.AppendUvarint(v, s.Addr)
		v = binary.AppendUvarint(v, s.Size)
		v = codec.AppendBool(v, s.Func)
	}
	if err := db.pdb.Set(codec.MetaSymbolsKey, v, pebble.Sync); err != nil {
		return fmt.Errorf("eventdb: store symbols: %w", err)
	}
	return nil
}

// ErrNoSymbols is returned by Symbols for a DB no replay has written to.
var ErrNoSymbols = errors.New("eventdb: the DB has no symbol table (no replay has written to it)")

// Symbols returns the guest image's symbol table.
func (db *DB) Symbols() (*Symbols, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	v, closer, err := db.pdb.Get(codec.MetaSymbolsKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNoSymbols
	}
	if err != nil {
		return nil, fmt.Errorf("eventdb: read symbols: %w", err)
	}
	defer closer.Close()
	r := codec.NewReader(v)
	if ver := r.Byte("version"); r.Err() == nil && ver != codec.SchemaVersion {
		return nil, corrupt(codec.MetaSymbolsKey, fmt.Errorf("symbol table version %d, want %d", ver, codec.SchemaVersion))
	}
	image := r.String("image")
	n := r.Count("symbols", 4)
	syms := make([]Symbol, 0, n)
	for i := 0; i < n && r.Err() == nil; i++ {
		syms = append(syms, Symbol{Name: r.String("name"), Addr: r.Uvarint("addr"), Size: r.Uvarint("size"), Func: r.Bool("func")})
	}
	if err := r.Done(); err != nil {
		return nil, corrupt(codec.MetaSymbolsKey, err)
	}
	return NewSymbols(image, syms), nil
}
