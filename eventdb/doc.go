// Package eventdb stores the events of replays (docs/architecture.md, "Probes
// and sampling" and "Diagnosis tools") in Pebble and lets tools range-scan
// them. One DB holds one recording; each replay of that recording with a
// probe set is a Run, numbered 1, 2, … and never reused. The replayer feeds a
// run through an Ingest; tools pick a run with ChooseRun (one rule for all of
// them) and read it with Query, Merged and Export. The package imports
// nothing from reprise.
//
//	db, err := eventdb.Open(dir, nil)
//	run, in, err := db.NewRun(tapePath, probes, "swbc every 100000")
//	for … { err = in.Add(&ev) }   // batched, BatchEvents per commit
//	err = in.Finish()               // run.Complete, with its event count
//
//	it := db.Query(eventdb.Query{Run: 1, Kinds: []eventdb.Kind{eventdb.KindSample}})
//	for it.Next() { use(it.Event()) }
//	err = it.Close()                // the iteration's error, if any
//
// # Writers and readers
//
// Open creates a DB in a directory that has none; that is for the writer
// (a replay). Tools open with Options.ReadOnly, which creates and writes
// nothing and refuses, with ErrNotDB, anything that is not an event DB: a
// missing directory, one without a Pebble DB, a Pebble DB without the
// schema version. Pebble locks a DB's directory for one process at a
// time, readers included: while a replay writes to a DB, Open fails with
// ErrInUse, and while a tool reads it, so does the replay's.
//
// # Durability and killed ingests
//
// NewRun writes the run record (Complete=false) and syncs it. Every batch
// of events the Ingest commits carries the run record too, its Events
// count updated: the batch's events and the record are two sstables that
// Pebble ingests in one step, so the count always equals the events
// present. Finish commits the rest with Complete=true and waits for it.
// A run's events never pass through Pebble's WAL or memtables (see
// Ingest below). A process killed before Finish leaves the run listed as
// incomplete with the events of the batches that made it; Open works on
// such a DB, removes the sstables the killed ingest had staged but not
// committed, and NewRun never reuses the id. A commit is on disk once
// done; with Options.Sync, Add waits for each one, so every batch
// survives a kill or a power cut. Without it (the default, fastest) a
// batch commits while the next fills, and a kill loses the batch under
// way besides the events buffered, never a part of a batch.
//
// # Key layout (schema version 1, stable)
//
// Integers in keys are big-endian so that byte order is numeric order.
// Pebble compares keys bytewise.
//
//	meta keys:
//	+-----+-----+                       +--------------------+
//	| 'm' | 'v' |                   ──► | schema version u32 |   written at creation
//	+-----+-----+                       +--------------------+
//	+-----+-----+-----------+           +--------------------+
//	| 'm' | 'r' | run u32   |       ──► | run record         |   one per run
//	+-----+-----+-----------+           +--------------------+
//	+-----+-----+                       +--------------------+
//	| 'm' | 's' |                   ──► | symbol table       |   the guest image's (Symbols)
//	+-----+-----+                       +--------------------+
//	+-----+-----+-----------+           +--------------------+
//	| 'm' | 'h' | run u32   |       ──► | host view          |   a run's Host, if its tape had one
//	+-----+-----+-----------+           +--------------------+
//
//	host view: version u8 | start varint ns (CLOCK_MONOTONIC) | missing str |
//	  sched u8 | lost uvarint | nvcpus uvarint, (index, tid uvarint) … |
//	  nthreads uvarint, (tid uvarint, comm str) …
//
//	event keys (30 bytes):
//	0     1           5      6            10           18             26         30
//	+-----+-----------+------+------------+------------+--------------+----------+
//	| 'e' | run u32   | kind | thread u32 | exit u64   | branch u64   | seq u32  |
//	+-----+-----------+------+------------+------------+--------------+----------+
//	                                        └── Position ──────────────┘
//
// so one run's events are contiguous, then one kind's, then one thread's,
// in execution order (Position). seq is the event's arrival ordinal within
// its run, assigned by the Ingest from 0: it keeps events at one position
// apart and in arrival order, and lets a tool merge threads back into
// arrival order. A run holds at most 2^32 events.
//
// # Values (schema version 1, stable)
//
// Every value starts with the schema version byte. varint is zig-zag
// (encoding/binary.AppendVarint), uvarint unsigned.
//
//	event value:
//	+---------+-----------+---------+---------+---------+-----------+---------+------------+
//	| version | time      | probe   | addr    | nargs   | args      | nstack  | stack      |
//	| u8 = 1  | varint ns | uvarint | uvarint | uvarint | uvarint … | uvarint | varint Δ … |
//	+---------+-----------+---------+---------+---------+-----------+---------+------------+
//	  stack[i] is coded as the wrapping difference from stack[i-1], stack[0] from addr.
//
//	run record:
//	+---------+--------------+------+----------+------+---------+----------+---------+----------+
//	| version | created      | tape | sampling | note | events  | complete | nprobes | probe …  |
//	| u8 = 1  | varint ns    | str  | str      | str  | uvarint | u8 0/1   | uvarint |          |
//	+---------+--------------+------+----------+------+---------+----------+---------+----------+
//	probe:  id uvarint | name str | spec str | symbol str | addr uvarint | return u8 | nargs uvarint | arg str …
//	str:    uvarint length | bytes
//	created is Unix nanoseconds; the run id is in the key.
//
// The layout is extensible without a version bump in one way: new event
// kinds may appear (a reader lists them under their number). Any other
// change bumps the schema version, and Open refuses a DB whose version
// differs from the one it was built for: the replays are re-run into a new
// DB. Decoders never panic on damaged bytes: Query and Runs report a
// *CorruptError naming the key.
//
// # Queries
//
// A Query picks a run and optionally kinds and a thread. These choose key
// ranges: one kind and one thread is a single tight range; several kinds
// are scanned one range after another, in kind order; no kinds scans the
// whole run (a thread with no kinds: that thread's range in every kind
// this package knows). The time range, Addr and Probe filters are applied
// while iterating: the scan still reads (and checks) the events it skips,
// so a tool that filters on time alone over a long run should also name
// the kinds and thread it wants.
//
// # Ingest
//
// Add encodes an event into the buffer of its (kind, thread) stream, where
// positions already increase; every BatchEvents events the Ingest hands
// the buffers to a goroutine that commits them while Add fills a second
// set. The commit writes the streams in key order (one found out of order
// is sorted on its own) as an sstable in a staging directory inside the
// DB's, and Pebble's Ingest links it into the LSM with the run record's
// sstable. The keys are written once, with no WAL record, memtable insert
// or flush; Pebble's compactions merge the overlapping batches later.
// Memory stays at two batches. Measured on a 2-core VM (BenchmarkIngest,
// with other work on the host): ~400 ns of CPU per event until Finish,
// compactions included, ~550 ns until Pebble is idle; see
// docs/benchmarks.md.
package eventdb
