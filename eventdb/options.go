package eventdb

import (
	"log"

	"github.com/cockroachdb/pebble/v2"
)

// DefaultBatchEvents is the number of events an Ingest buffers per commit
// when Options.BatchEvents is zero. Each commit is an sstable in L0 that
// compactions merge with the run's earlier ones: larger batches mean
// fewer rewrites (256 Ki events, ~16 MiB buffered, cost about a third
// less CPU per event than 64 Ki on BenchmarkIngest). An Ingest holds two
// batches.
const DefaultBatchEvents = 256 << 10

// Options configure a DB. A nil *Options is valid, and zero fields mean
// the defaults.
type Options struct {
	// Sync makes Add wait for the commit of each batch it completes, so
	// that every batch committed before a process kill or a power cut is
	// in the DB. By default a batch commits while the next one fills
	// (much faster): a kill loses the batch under way and the events
	// buffered, never a part of a batch. Every commit is on disk once
	// done, and Ingest.Finish waits for its own.
	Sync bool

	// BatchEvents is how many events an Ingest buffers before it commits
	// them as one batch. Default DefaultBatchEvents.
	BatchEvents int

	// CacheBytes is the size of Pebble's block cache, which keeps
	// decompressed blocks for repeated scans. Default DefaultCacheBytes.
	CacheBytes int64

	// ReadOnly opens an existing event DB for reading, as the tools do:
	// Open creates nothing and writes nothing (not even the schema
	// version of a new DB), fails with ErrNotDB for a directory that is
	// not an event DB, missing ones included, and the methods that write
	// return ErrReadOnly. Pebble still locks the directory: a read-only
	// DB keeps writers out while it is open, and cannot be opened while
	// a writer has it (ErrInUse).
	ReadOnly bool
}

// DefaultCacheBytes is the block cache size when Options.CacheBytes is zero.
const DefaultCacheBytes = 64 << 20

func (o *Options) batchEvents() int {
	if o == nil || o.BatchEvents <= 0 {
		return DefaultBatchEvents
	}
	return o.BatchEvents
}

func (o *Options) cacheBytes() int64 {
	if o == nil || o.CacheBytes <= 0 {
		return DefaultCacheBytes
	}
	return o.CacheBytes
}

func (o *Options) readOnly() bool { return o != nil && o.ReadOnly }

// pebbleOptions tunes Pebble for what an event DB does: long bursts of
// writes from one ingest, then scans.
//
//   - An ingest's events reach Pebble as sstables (Ingest), so the
//     memtables and the WAL only carry the few meta keys; Pebble's
//     default memtable size does for them.
//   - Each ingested batch overlaps all of its run's earlier ones and
//     lands in L0; every L0 compaction rewrites the run's data below it.
//     Compacting at 8 L0 sublevels instead of 4 merges twice as many
//     batches per rewrite: on BenchmarkIngest, ~85 MB compacted instead
//     of 120–160 MB for 3 M events, 10–30% less CPU per event counted
//     until Pebble is idle. The stop-writes threshold (memtable writes
//     only) moves up with it.
//   - The format is pinned at FormatFlushableIngestExcises, the last one
//     with row-oriented sstable blocks (TableFormatPebblev4): measured on
//     BenchmarkIngest, writing them costs ~20% less CPU per event than
//     the columnar blocks of newer formats, the files are ~5% smaller,
//     and scans are as fast. A later build may raise it; Pebble upgrades
//     a DB's format in place on Open (this is not a schema change).
func pebbleOptions(o *Options) *pebble.Options {
	return &pebble.Options{
		CacheSize:             o.cacheBytes(),
		FormatMajorVersion:    pebble.FormatFlushableIngestExcises,
		L0CompactionThreshold: 8,
		L0StopWritesThreshold: 32,
		Logger:                quietLogger{},
		ReadOnly:              o.readOnly(),
	}
}

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
