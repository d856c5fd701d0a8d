package eventdb

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/reprise-vm/reprise/eventdb/internal/codec"
	"github.com/reprise-vm/reprise/symtab"
)

// Symbol is a symbol of the recorded guest image. The DB keeps the image's
// symbol table so that tools name addresses from the DB alone.
type Symbol = symtab.Symbol

// Symbols is a guest image's symbol table (All, Resolve, Describe,
// Function) and what identifies the image.
type Symbols struct {
	Image string // e.g. the image's SHA-256
	*symtab.Table
}

// NewSymbols builds a table; syms need not be sorted.
func NewSymbols(image string, syms []Symbol) *Symbols {
	return &Symbols{Image: image, Table: symtab.New(syms)}
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
	v = binary.AppendUvarint(v, uint64(len(t.All())))
	for _, s := range t.All() {
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
