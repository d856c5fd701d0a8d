package eventdb

import (
	"errors"
	"fmt"

	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// Sentinel errors. Returned errors wrap them with the operation and the id.
var (
	ErrNoRun    = errors.New("eventdb: no such run")
	ErrClosed   = errors.New("eventdb: closed")
	ErrFinished = errors.New("eventdb: ingest already finished")
	ErrNotDB    = errors.New("eventdb: not an event DB")
	ErrReadOnly = errors.New("eventdb: opened read-only")
	// ErrInUse says another process has the DB open. Pebble locks a DB's
	// directory for as long as one process has it open, reading or
	// writing, so a tool cannot read a DB while a replay writes to it.
	ErrInUse = errors.New("eventdb: in use by another process")
)

// SchemaError says a DB was written with another schema version than the
// one this package reads.
type SchemaError struct {
	Dir         string
	Found, Want uint32
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("eventdb: %s holds schema version %d, this build reads version %d: "+
		"re-run the replays into a new DB (another directory), or read this one with a reprise build of version %d",
		e.Dir, e.Found, e.Want, e.Found)
}

// CorruptError is a key or value that does not decode.
type CorruptError struct {
	Key    []byte // the damaged entry's key
	Reason string // what is wrong
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("eventdb: corrupt entry %s (key %x): %s", describeKey(e.Key), e.Key, e.Reason)
}

func corrupt(key []byte, err error) error {
	return &CorruptError{Key: append([]byte(nil), key...), Reason: err.Error()}
}

// describeKey names a key for humans: "run 3 sample thread 7 at 12:345 seq 9".
func describeKey(key []byte) string {
	if k, err := codec.DecodeEventKey(key); err == nil {
		return fmt.Sprintf("run %d %v thread %d at %d:%d seq %d", k.Run, Kind(k.Kind), k.Thread, k.Exit, k.Branch, k.Seq)
	}
	if run, err := codec.DecodeRunKey(key); err == nil {
		return fmt.Sprintf("run %d record", run)
	}
	return fmt.Sprintf("%q", key)
}
