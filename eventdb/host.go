package eventdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/reprise-vm/reprise/eventdb/internal/codec"
)

// Host is what a run's recording saw of its host, beside the host event
// kinds (KindVCPURun ... KindHostMigrate).
type Host struct {
	// Start is the host's CLOCK_MONOTONIC reading at the recording's
	// time zero: it puts the runs of VMs recorded at once on one host on
	// one time line.
	Start time.Duration
	// Missing says what the recording lacks, "" if nothing: no host view
	// at all, or no host scheduling (tracefs was not available).
	Missing string
	Sched   bool   // host scheduling (KindHostSwitch ...) was recorded
	Lost    uint64 // host scheduler events the kernel dropped
	VCPUs   []VCPU
	Threads []HostThread // names of the host threads seen
}

// VCPU is one vCPU of the recording and the host thread that ran it.
type VCPU struct {
	Index uint32
	TID   uint32
}

// HostThread names a host thread.
type HostThread struct {
	TID  uint32
	Comm string
}

// ErrNoHost is returned by Host for a run stored without a host view.
var ErrNoHost = errors.New("eventdb: the run has no host view")

// SetHost stores run's host view.
func (db *DB) SetHost(run uint32, h *Host) error {
	if err := db.writable(); err != nil {
		return err
	}
	v := []byte{codec.SchemaVersion}
	v = binary.AppendVarint(v, int64(h.Start))
	v = codec.AppendString(v, h.Missing)
	v = codec.AppendBool(v, h.Sched)
	v = binary.AppendUvarint(v, h.Lost)
	v = binary.AppendUvarint(v, uint64(len(h.VCPUs)))
	for _, c := range h.VCPUs {
		v = binary.AppendUvarint(v, uint64(c.Index))
		v = binary.AppendUvarint(v, uint64(c.TID))
	}
	v = binary.AppendUvarint(v, uint64(len(h.Threads)))
	for _, t := range h.Threads {
		v = binary.AppendUvarint(v, uint64(t.TID))
		v = codec.AppendString(v, t.Comm)
	}
	if err := db.pdb.Set(codec.HostKey(run), v, pebble.Sync); err != nil {
		return fmt.Errorf("eventdb: store run %d's host view: %w", run, err)
	}
	return nil
}

// Host returns run's host view, or ErrNoHost.
func (db *DB) Host(run uint32) (*Host, error) {
	if db.closed.Load() {
		return nil, ErrClosed
	}
	key := codec.HostKey(run)
	v, closer, err := db.pdb.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("run %d: %w", run, ErrNoHost)
	}
	if err != nil {
		return nil, fmt.Errorf("eventdb: read run %d's host view: %w", run, err)
	}
	defer closer.Close()
	r := codec.NewReader(v)
	if ver := r.Byte("version"); r.Err() == nil && ver != codec.SchemaVersion {
		return nil, corrupt(key, fmt.Errorf("host view version %d, want %d", ver, codec.SchemaVersion))
	}
	h := &Host{Start: time.Duration(r.Varint("start")), Missing: r.String("missing"), Sched: r.Bool("sched"), Lost: r.Uvarint("lost")}
	n := r.Count("vcpus", 2)
	for i := 0; i < n && r.Err() == nil; i++ {
		h.VCPUs = append(h.VCPUs, VCPU{Index: r.Uint32("index"), TID: r.Uint32("tid")})
	}
	n = r.Count("threads", 2)
	for i := 0; i < n && r.Err() == nil; i++ {
		h.Threads = append(h.Threads, HostThread{TID: r.Uint32("tid"), Comm: r.String("comm")})
	}
	if err := r.Done(); err != nil {
		return nil, corrupt(key, err)
	}
	return h, nil
}
