package eventdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/reprise-vm/reprise/eventdb/internal/codec"
	"github.com/reprise-vm/reprise/symtab"
)

// Symbol is a symbol of the recorded guest image. The DB keeps the image's
// symbol table so that tools name addresses from the DB alone.
type Symbol = symtab.Symbol

// Symbols is a guest image's symbol table (All, Resolve, Describe,
// Function) and what identifies the image. For a Linux program the table
// holds the symbols of every file it mapped, at the addresses they were
// mapped at (a shared library's named SYMBOL@LIBRARY), and Mappings says
// where each file was.
type Symbols struct {
	Image string // e.g. the image's SHA-256
	*symtab.Table
	Mappings []Mapping
	Objects  []Object
}

// Object is an ELF file a Linux program loaded: where its image lies,
// zero-filled data included, and its own symbols.
type Object struct {
	Path       string
	BuildID    string
	Start, End uint64 // [Start, End): its base and the end of its image
	// Symbols are the file's, at the addresses it was loaded at (a
	// shared library's named SYMBOL@LIBRARY): processes that loaded
	// different files at one address (two executables, or libraries
	// loaded in another order) name it each after its own. Nil in a
	// table written before objects kept theirs.
	Symbols *symtab.Table
}

// ObjectRef names an object of a Symbols table: its index in Objects
// plus one; 0 names none. A Linux program's samples carry the ref of the
// file each of their addresses was in (Event.SampleObjects).
type ObjectRef = uint64

// NewObjectSymbols builds a Linux program's table from the files it
// loaded, each with its symbols, and its mappings; the whole table is
// the union of the objects'.
func NewObjectSymbols(image string, maps []Mapping, objs []Object) *Symbols {
	var all []Symbol
	for _, o := range objs {
		if o.Symbols != nil {
			all = append(all, o.Symbols.All()...)
		}
	}
	s := NewSymbols(image, all)
	s.Mappings, s.Objects = maps, objs
	return s
}

// Object returns the object ref names, or nil.
func (s *Symbols) Object(ref ObjectRef) *Object {
	if ref == 0 || ref > uint64(len(s.Objects)) {
		return nil
	}
	return &s.Objects[ref-1]
}

// Locate is the object addr was in: the one ref names if its image holds
// addr, else the first that holds it; 0 if none does.
func (s *Symbols) Locate(ref ObjectRef, addr uint64) ObjectRef {
	if o := s.Object(ref); o != nil && o.holds(addr) {
		return ref
	}
	for i, o := range s.Objects {
		if o.holds(addr) {
			return ObjectRef(i + 1)
		}
	}
	return 0
}

func (o *Object) holds(addr uint64) bool { return addr >= o.Start && addr < o.End }

// tableIn is the table that names addresses in the object ref names: its
// own, when it has one, else the whole table.
func (s *Symbols) tableIn(ref ObjectRef) *symtab.Table {
	if o := s.Object(ref); o != nil && o.Symbols != nil {
		return o.Symbols
	}
	return s.Table
}

// ResolveIn is Resolve within the object ref names (0: anywhere).
func (s *Symbols) ResolveIn(ref ObjectRef, addr uint64) (Symbol, uint64, bool) {
	return s.tableIn(ref).Resolve(addr)
}

// Function names the function holding addr; an address that no
// function symbol holds but a loaded file does is named FILE+0xOFFSET,
// the address in the file, as perf names it (libz.so.1+0x4a26).
func (s *Symbols) Function(addr uint64) string { return s.FunctionIn(0, addr) }

// FunctionIn is Function within the object ref names (0: anywhere).
func (s *Symbols) FunctionIn(ref ObjectRef, addr uint64) string {
	if sym, _, ok := s.ResolveIn(ref, addr); ok && sym.Func {
		return sym.Name
	}
	return s.inObject(ref, addr)
}

// Describe names addr as "symbol", "symbol+0x12", FILE+0xOFFSET in a
// loaded file no symbol covers, or hex.
func (s *Symbols) Describe(addr uint64) string { return s.DescribeIn(0, addr) }

// DescribeIn is Describe within the object ref names (0: anywhere).
func (s *Symbols) DescribeIn(ref ObjectRef, addr uint64) string {
	t := s.tableIn(ref)
	if _, _, ok := t.Resolve(addr); ok {
		return t.Describe(addr)
	}
	return s.inObject(ref, addr)
}

func (s *Symbols) inObject(ref ObjectRef, addr uint64) string {
	if o := s.Object(s.Locate(ref, addr)); o != nil {
		return fmt.Sprintf("%s+%#x", filepath.Base(o.Path), addr-o.Start)
	}
	return fmt.Sprintf("%#x", addr)
}

// ObjectAt finds the loaded file whose image holds addr.
func (s *Symbols) ObjectAt(addr uint64) (Object, bool) {
	if o := s.Object(s.Locate(0, addr)); o != nil {
		return *o, true
	}
	return Object{}, false
}

// Mapping is a file a Linux program mapped.
type Mapping struct {
	PID        uint32
	Start, End uint64 // [Start, End)
	Offset     uint64 // the file offset at Start
	Path       string
	BuildID    string // hex, "" if the file has none
	Exec       bool
}

// maxMappings bounds the mappings a symbol table keeps.
const maxMappings = 1 << 16

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
	if len(t.Mappings) > maxMappings {
		return fmt.Errorf("eventdb: %d mappings (at most %d)", len(t.Mappings), maxMappings)
	}
	if len(t.Mappings) > 0 { // an optional section: a kit image has none
		v = binary.AppendUvarint(v, uint64(len(t.Mappings)))
		for _, m := range t.Mappings {
			v = binary.AppendUvarint(v, uint64(m.PID))
			v = binary.AppendUvarint(v, m.Start)
			v = binary.AppendUvarint(v, m.End)
			v = binary.AppendUvarint(v, m.Offset)
			v = codec.AppendString(v, m.Path)
			v = codec.AppendString(v, m.BuildID)
			v = codec.AppendBool(v, m.Exec)
		}
		if len(t.Objects) > maxMappings {
			return fmt.Errorf("eventdb: %d objects (at most %d)", len(t.Objects), maxMappings)
		}
		v = binary.AppendUvarint(v, uint64(len(t.Objects)))
		for _, o := range t.Objects {
			v = codec.AppendString(v, o.Path)
			v = codec.AppendString(v, o.BuildID)
			v = binary.AppendUvarint(v, o.Start)
			v = binary.AppendUvarint(v, o.End)
		}
		// Each object's symbols, as indices into the table's (which hold
		// them all), ascending and delta-coded.
		index := make(map[Symbol]uint64, len(t.All()))
		for i, sym := range t.All() {
			index[sym] = uint64(i)
		}
		for _, o := range t.Objects {
			var syms []Symbol
			if o.Symbols != nil {
				syms = o.Symbols.All()
			}
			at := make([]uint64, 0, len(syms))
			for _, sym := range syms {
				if i, ok := index[sym]; ok {
					at = append(at, i)
				}
			}
			slices.Sort(at)
			at = slices.Compact(at) // a symbol a file lists twice
			v = binary.AppendUvarint(v, uint64(len(at)))
			prev := uint64(0)
			for _, i := range at {
				v = binary.AppendUvarint(v, i-prev)
				prev = i
			}
		}
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
	var maps []Mapping
	var objs []Object
	if r.More() {
		n := r.Count("mappings", 8)
		maps = make([]Mapping, 0, min(n, maxMappings))
		for i := 0; i < n && r.Err() == nil; i++ {
			maps = append(maps, Mapping{PID: uint32(r.Uvarint("pid")), Start: r.Uvarint("start"), End: r.Uvarint("end"),
				Offset: r.Uvarint("offset"), Path: r.String("path"), BuildID: r.String("build-id"), Exec: r.Bool("exec")})
		}
		n = r.Count("objects", 4)
		objs = make([]Object, 0, min(n, maxMappings))
		for i := 0; i < n && r.Err() == nil; i++ {
			objs = append(objs, Object{Path: r.String("path"), BuildID: r.String("build-id"), Start: r.Uvarint("start"), End: r.Uvarint("end")})
		}
	}
	s := NewSymbols(image, syms)
	if r.More() { // each object's symbols (absent from older DBs)
		sorted := s.All()
		for i := 0; i < len(objs) && r.Err() == nil; i++ {
			n := r.Count("object symbols", 1)
			own := make([]Symbol, 0, min(n, len(sorted)))
			at := uint64(0)
			for j := 0; j < n && r.Err() == nil; j++ {
				d := r.Uvarint("symbol index")
				if at += d; j > 0 && d == 0 || at >= uint64(len(sorted)) {
					return nil, corrupt(codec.MetaSymbolsKey, fmt.Errorf("object %d: symbol index %d of %d", i, at, len(sorted)))
				}
				own = append(own, sorted[at])
			}
			objs[i].Symbols = symtab.New(own)
		}
	}
	if err := r.Done(); err != nil {
		return nil, corrupt(codec.MetaSymbolsKey, err)
	}
	s.Mappings, s.Objects = maps, objs
	return s, nil
}
