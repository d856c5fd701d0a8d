package eventdb

import (
	"log"

	"github.com/cockroachdb/pebble/v2"
)

// DefaultBatchEvents is the number of events an Ingest buffers per commit
// when Options.BatchEvents is zero.
const DefaultBatchEvents = 64 << 10

// Options configure a DB. A nil *Options is valid, and zero fields mean
// the defaults.
type Options struct {
	// Sync makes every batch commit wait until Pebble's WAL is on disk
	// (pebble.Sync), so a committed batch survives a process kill or a
	// power cut. The default commits batches with pebble.NoSync: much
	// faster, and a kill loses at most the last few batches, whole.
	// NewRun and Ingest.Finish always sync.
	Sync bool

	// BatchEvents is how many events an Ingest buffers before it commits
	// them as one batch. Default DefaultBatchEvents.
	BatchEvents int
}

func (o *Options) batchEvents() int {
	if o == nil || o.BatchEvents <= 0 {
		return DefaultBatchEvents
	}
	return o.BatchEvents
}

func (o *Options) writeOptions() *pebble.WriteOptions {
	if o != nil && o.Sync {
		return pebble.Sync
	}
	return pebble.NoSync
}

// pebbleOptions tunes Pebble for what an event DB does: long bursts of
// sorted-ish writes from one ingest, then scans. Larger memtables keep a
// 64 Ki-event batch well below Pebble's large-batch threshold (half a
// memtable) and cut the number of flushes.
func pebbleOptions() *pebble.Options {
	o := &pebble.Options{
		FormatMajorVersion:          pebble.FormatNewest,
		MemTableSize:                64 << 20,
		MemTableStopWritesThreshold: 4,
		Logger:                      quietLogger{},
	}
	if tunePebble != nil {
		tunePebble(o)
	}
	return o
}

var tunePebble func(*pebble.Options) // EXPERIMENT

// quietLogger drops Pebble's informational messages, which a CLI tool's
// user has no use for, and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	log.Printf("eventdb: pebble: "+format, args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	log.Fatalf("eventdb: pebble: "+format, args...)
}
