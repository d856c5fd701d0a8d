package eventdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// SchemaVersion is the version of the key and value layouts this package
// reads and writes (see the package comment).
const SchemaVersion = codec.SchemaVersion

// DB is one recording's event database. Its methods are safe for
// concurrent use; each Ingest and Iter belongs to one goroutine.
type DB struct {
	pdb       *pebble.DB
	dir       string
	opts      *Options
	tableOpts sstable.WriterOptions // for the sstables an Ingest writes
	closed    atomic.Bool

	mu struct {
		sync.Mutex
		nextRun uint32 // the id NewRun hands out next
	}
}

// Open opens the event DB in dir, creating it if absent (unless
// Options.ReadOnly). It fails with a *SchemaError if the DB was written
// with another schema version, with ErrNotDB if dir holds a Pebble DB
// that is not an event DB, and with ErrInUse while another process has
// the DB open. A DB whose last ingest was killed opens normally; that
// run stays incomplete.
func Open(dir string, o *Options) (*DB, error) {
	if o.readOnly() {
		if err := peek(dir); err != nil {
			return nil, err
		}
	}
	popts := pebbleOptions(o)
	pdb, err := pebble.Open(dir, popts)
	if err != nil {
		// Pebble locks the directory with fcntl(F_SETLK), which fails
		// with EAGAIN (EWOULDBLOCK) while another process holds the
		// lock; Pebble returns that errno as is.
		if errors.Is(err, syscall.EAGAIN) {
			return nil, fmt.Errorf("%w: %s: %w", ErrInUse, dir, err)
		}
		return nil, fmt.Errorf("eventdb: open %s: %w", dir, err)
	}
	var opts Options
	if o != nil {
		opts = *o
	}
	// An ingest's sstables are built as Pebble builds its L0 tables.
	popts.EnsureDefaults()
	tableOpts := popts.MakeWriterOptions(0, pdb.FormatMajorVersion().MaxTableFormat())
	db := &DB{pdb: pdb, dir: dir, opts: &opts, tableOpts: tableOpts}
	if err := db.checkSchema(); err != nil {
		_ = pdb.Close()
		return nil, err
	}
	if !opts.ReadOnly {
		if err := resetStaging(dir); err != nil {
			_ = pdb.Close()
			return nil, err
		}
	}
	last, err := db.lastRun()
	if err != nil {
		_ = pdb.Close()
		return nil, err
	}
	db.mu.nextRun = last + 1
	return db, nil
}

// peek makes sure dir holds a Pebble DB before a read-only open: Pebble
// would refuse anything else too, but only after leaving its LOCK file
// in the directory.
func peek(dir string) error {
	desc, err := pebble.Peek(dir, vfs.Default)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%w: %w", ErrNotDB, err)
	case err != nil:
		return fmt.Errorf("eventdb: open %s: %w", dir, err)
	case !desc.Exists:
		return fmt.Errorf("%w: %s holds no Pebble DB", ErrNotDB, dir)
	}
	return nil
}

// checkSchema compares the stored schema version with ours, writing it
// into a new, empty DB. Read-only, an empty DB is no event DB: Open
// writes the version as it creates one.
func (db *DB) checkSchema() error {
	v, closer, err := db.pdb.Get(codec.MetaVersionKey)
	switch {
	case err == nil:
		defer closer.Close()
		if len(v) != 4 {
			return corrupt(codec.MetaVersionKey, fmt.Errorf("%s: schema version is %d bytes, want 4", db.dir, len(v)))
		}
		if found := binary.BigEndian.Uint32(v); found != SchemaVersion {
			return &SchemaError{Dir: db.dir, Found: found, Want: SchemaVersion}
		}
		return nil
	case errors.Is(err, pebble.ErrNotFound):
		it, err := db.pdb.NewIter(nil)
		if err != nil {
			return fmt.Errorf("eventdb: open %s: %w", db.dir, err)
		}
		empty := !it.First()
		if err := it.Close(); err != nil {
			return fmt.Errorf("eventdb: open %s: %w", db.dir, err)
		}
		switch {
		case !empty:
			return fmt.Errorf("%w: %s holds a Pebble DB without an eventdb schema version", ErrNotDB, db.dir)
		case db.opts.ReadOnly:
			return fmt.Errorf("%w: %s holds an empty Pebble DB", ErrNotDB, db.dir)
		}
		ver := binary.BigEndian.AppendUint32(nil, SchemaVersion)
		if err := db.pdb.Set(codec.MetaVersionKey, ver, pebble.Sync); err != nil {
			return fmt.Errorf("eventdb: create %s: %w", db.dir, err)
		}
		return nil
	default:
		return fmt.Errorf("eventdb: open %s: read schema version: %w", db.dir, err)
	}
}

// lastRun returns the highest run id recorded, 0 if none.
func (db *DB) lastRun() (uint32, error) {
	prefix := codec.RunKeyPrefix()
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return 0, fmt.Errorf("eventdb: open %s: %w", db.dir, err)
	}
	var last uint32
	if it.Last() {
		if last, err = codec.DecodeRunKey(it.Key()); err != nil {
			err = corrupt(it.Key(), err)
			_ = it.Close()
			return 0, err
		}
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("eventdb: open %s: find last run: %w", db.dir, err)
	}
	return last, nil
}

// writable returns why db cannot be written to, nil if it can.
func (db *DB) writable() error {
	switch {
	case db.closed.Load():
		return ErrClosed
	case db.opts.ReadOnly:
		return ErrReadOnly
	}
	return nil
}

// Dir returns the directory the DB lives in.
func (db *DB) Dir() string { return db.dir }

// Close closes the DB. Close every Iter and finish or close every Ingest
// first. Calls after Close return ErrClosed.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return ErrClosed
	}
	if err := db.pdb.Close(); err != nil {
		return fmt.Errorf("eventdb: close %s: %w", db.dir, err)
	}
	return nil
}

// Compact rewrites the whole DB into its final levels and waits for it.
// Reads are fastest on a compacted DB; after a large ingest Pebble would
// otherwise compact in the background while tools read.
func (db *DB) Compact() error {
	if err := db.writable(); err != nil {
		return err
	}
	if err := db.pdb.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		return fmt.Errorf("eventdb: compact %s: %w", db.dir, err)
	}
	return nil
}
