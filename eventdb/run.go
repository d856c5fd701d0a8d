package eventdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// Probe is one entry of a run's probe table: what a probe event's Probe id
// stands for.
type Probe struct {
	ID     uint32   `json:"id"`     // non-zero, unique within the run
	Name   string   `json:"name"`   // e.g. "mutex_lock"
	Spec   string   `json:"spec"`   // as the user wrote it, e.g. "mutex_lock+0 args=rdi"
	Symbol string   `json:"symbol"` // the ELF symbol it resolved to
	Addr   uint64   `json:"addr"`   // the probed guest address (0: one per mapping, a Linux program's)
	Return bool     `json:"return"` // a return probe
	Args   []string `json:"args"`   // names of the event's Args, in order
}

// Run is one replay of the recording with a probe set.
type Run struct {
	ID       uint32    `json:"run"`
	Created  time.Time `json:"created"` // when NewRun was called (host clock, nanoseconds)
	Tape     string    `json:"tape"`    // the tape replayed
	Probes   []Probe   `json:"probes"`
	Sampling string    `json:"sampling"` // the sampling configuration, free text ("" = none)
	Note     string    `json:"note"`     // free text, set with Ingest.SetNote
	Events   uint64    `json:"events"`   // events committed so far
	Complete bool      `json:"complete"` // Ingest.Finish ran
}

// Probe returns the probe with the given id.
func (r *Run) Probe(id uint32) (Probe, bool) {
	for _, p := range r.Probes {
		if p.ID == id {
			return p, true
		}
	}
	return Probe{}, false
}

func appendRun(dst []byte, r *Run) []byte {
	dst = append(dst, codec.SchemaVersion)
	dst = binary.AppendVarint(dst, r.Created.UnixNano())
	dst = codec.AppendString(dst, r.Tape)
	dst = codec.AppendString(dst, r.Sampling)
	dst = codec.AppendString(dst, r.Note)
	dst = binary.AppendUvarint(dst, r.Events)
	dst = codec.AppendBool(dst, r.Complete)
	dst = binary.AppendUvarint(dst, uint64(len(r.Probes)))
	for i := range r.Probes {
		p := &r.Probes[i]
		dst = binary.AppendUvarint(dst, uint64(p.ID))
		dst = codec.AppendString(dst, p.Name)
		dst = codec.AppendString(dst, p.Spec)
		dst = codec.AppendString(dst, p.Symbol)
		dst = binary.AppendUvarint(dst, p.Addr)
		dst = codec.AppendBool(dst, p.Return)
		dst = binary.AppendUvarint(dst, uint64(len(p.Args)))
		for _, a := range p.Args {
			dst = codec.AppendString(dst, a)
		}
	}
	return dst
}

// decodeRun decodes a run record; the id comes from the key.
func decodeRun(id uint32, b []byte) (Run, error) {
	r := codec.NewReader(b)
	if ver := r.Byte("version"); r.Err() == nil && ver != codec.SchemaVersion {
		return Run{}, fmt.Errorf("run record version %d, want %d", ver, codec.SchemaVersion)
	}
	run := Run{ID: id}
	run.Created = time.Unix(0, r.Varint("created"))
	run.Tape = r.String("tape")
	run.Sampling = r.String("sampling")
	run.Note = r.String("note")
	run.Events = r.Uvarint("events")
	run.Complete = r.Bool("complete")
	// A probe takes at least 7 bytes: id, 3 lengths, addr, return, nargs.
	if n := r.Count("probe count", 7); n > 0 {
		run.Probes = make([]Probe, n)
	}
	for i := range run.Probes {
		p := &run.Probes[i]
		p.ID = r.Uint32("probe id")
		p.Name = r.String("probe name")
		p.Spec = r.String("probe spec")
		p.Symbol = r.String("probe symbol")
		p.Addr = r.Uvarint("probe addr")
		p.Return = r.Bool("probe return")
		if n := r.Count("probe args count", 1); n > 0 {
			p.Args = make([]string, n)
		}
		for j := range p.Args {
			p.Args[j] = r.String("probe arg")
		}
	}
	if err := r.Done(); err != nil {
		return Run{}, err
	}
	return run, nil
}

// NewRun starts run number n+1 (n: the highest id ever handed out in this
// DB, killed runs included) replaying tape with the given probe table and
// sampling configuration. It stores the run record, Complete=false, and
// syncs it before returning. The returned Ingest adds the run's events;
// it updates *Run's Events and Complete as it commits.
func (db *DB) NewRun(tape string, probes []Probe, sampling string) (*Run, *Ingest, error) {
	if err := db.writable(); err != nil {
		return nil, nil, err
	}
	seen := make(map[uint32]bool, len(probes))
	for _, p := range probes {
		if p.ID == 0 || seen[p.ID] {
			return nil, nil, fmt.Errorf("eventdb: new run: probe %q: id %d is zero or used twice", p.Name, p.ID)
		}
		seen[p.ID] = true
	}
	run := &Run{
		Created:  time.Unix(0, time.Now().UnixNano()),
		Tape:     tape,
		Probes:   cloneProbes(probes),
		Sampling: sampling,
	}

	db.mu.Lock()
	defer db.mu.Unlock()
	run.ID = db.mu.nextRun
	if run.ID == 0 {
		return nil, nil, fmt.Errorf("eventdb: new run: all 2^32-1 run ids are used")
	}
	if err := db.pdb.Set(codec.RunKey(run.ID), appendRun(nil, run), pebble.Sync); err != nil {
		return nil, nil, fmt.Errorf("eventdb: new run %d: %w", run.ID, err)
	}
	db.mu.nextRun++
	return run, newIngest(db, run), nil
}

func cloneProbes(ps []Probe) []Probe {
	if len(ps) == 0 {
		return nil
	}
	out := slices.Clone(ps)
	for i := range out {
		out[i].Args = slices.Clone(out[i].Args)
	}
	return out
}

// Runs returns every run in id order, incomplete ones included.
func (db *DB) Runs() ([]Run, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	prefix := codec.RunKeyPrefix()
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: codec.PrefixEnd(prefix)})
	if err != nil {
		return nil, fmt.Errorf("eventdb: runs: %w", err)
	}
	var runs []Run
	for ok := it.First(); ok; ok = it.Next() {
		id, err := codec.DecodeRunKey(it.Key())
		if err != nil {
			err = corrupt(it.Key(), err)
			_ = it.Close()
			return nil, err
		}
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return nil, fmt.Errorf("eventdb: runs: run %d: %w", id, err)
		}
		run, err := decodeRun(id, v)
		if err != nil {
			err = corrupt(it.Key(), err)
			_ = it.Close()
			return nil, err
		}
		runs = append(runs, run)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("eventdb: runs: %w", err)
	}
	return runs, nil
}

// Run returns the record of run id, or an error wrapping ErrNoRun.
func (db *DB) Run(id uint32) (Run, error) {
	if db.closed.Load() {
		return Run{}, ErrClosed
	}
	key := codec.RunKey(id)
	v, closer, err := db.pdb.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return Run{}, fmt.Errorf("%w: run %d", ErrNoRun, id)
	}
	if err != nil {
		return Run{}, fmt.Errorf("eventdb: run %d: %w", id, err)
	}
	defer closer.Close()
	run, err := decodeRun(id, v)
	if err != nil {
		return Run{}, corrupt(key, err)
	}
	return run, nil
}

// SetNote sets the note of a finished run (Ingest.SetNote sets one while
// the run is written).
func (db *DB) SetNote(id uint32, note string) error {
	if err := db.writable(); err != nil {
		return err
	}
	run, err := db.Run(id)
	if err != nil {
		return err
	}
	run.Note = note
	if err := db.pdb.Set(codec.RunKey(id), appendRun(nil, &run), pebble.Sync); err != nil {
		return fmt.Errorf("eventdb: run %d: set note: %w", id, err)
	}
	return nil
}
