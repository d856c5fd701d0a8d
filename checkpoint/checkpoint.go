// Package checkpoint keeps a recording's or a replay's checkpoints in a
// file beside its tape: at each, the whole machine (vmm.Snapshot), the
// replay engine's state, guest RAM and what the guest wrote to its disk,
// so that a replay can start there instead of at boot. RAM and the disk's
// written pieces are kept page by page, each distinct page once in the
// file (deduplicated by content, zstd-compressed), so a checkpoint writes
// only the pages that changed since the ones before it.
//
// The file is a magic line, then frames: tag (4 bytes), body length and
// CRC-32C (little-endian uint32 each), body.
//
//	HEAD  JSON: the format version and the recording the file belongs to
//	PAGE  zstd of pages new to the file, 4 KiB each (their ids follow on)
//	CKPT  zstd of JSON: one checkpoint's state, RAM's page ids, and for a
//	      machine with a disk its written-sector bitmap and the page ids
//	      of the 4 KiB pieces holding written sectors
//
// A checkpoint's pages all precede it. A file is as untrusted as a tape:
// every length is bounded before it is allocated, and damage is reported
// with its offset, never used.
package checkpoint

import (
	"cmp"
	"encoding/binary"
	"errors"
	"time"

	"github.com/reprise-vm/reprise/tape"
	"github.com/reprise-vm/reprise/vmm"
)

// PageSize is the unit RAM is kept in.
const PageSize = 4096

// Version is the file format's version.
const Version = 1

var magic = []byte("reprise checkpoints\n")

// Frame tags.
var (
	tagHead = [4]byte{'H', 'E', 'A', 'D'}
	tagPage = [4]byte{'P', 'A', 'G', 'E'}
	tagCkpt = [4]byte{'C', 'K', 'P', 'T'}
)

// Bounds on what a file may hold.
const (
	maxFrame        = 64 << 20  // compressed body
	maxPagesInFrame = 1 << 14   // 64 MiB of pages
	maxMeta         = 128 << 20 // a checkpoint's decompressed state (a Linux program's written files included)
	maxHead         = 64 << 10
	maxCheckpoints  = 1 << 16
)

// Recording says which recording a file's checkpoints belong to: a file
// is refused for any other tape.
type Recording struct {
	ImageSHA256 [32]byte
	Created     time.Time
	MemBytes    uint64
}

// Checkpoint is the state of a replay at one point.
type Checkpoint struct {
	// Where: the record time, the tape events applied before it, the
	// position.
	Time   time.Duration
	Events uint64
	Pos    vmm.Position
	Stop   vmm.Stop // the kind of stop it was taken at
	// Machine is everything but RAM; Engine the replay engine's.
	Machine *vmm.Snapshot
	Engine  EngineState
	// RAMHash is the SHA-256 of guest RAM here: what a replay reaching
	// this point must have. RAMSum is RAM's xxHash64 (vmm.Machine.RAMSum),
	// what RAM restored from the file is checked against, in a tenth of
	// the time; 0 in checkpoints written before it, whose RAMHash is
	// checked instead.
	RAMHash [32]byte
	RAMSum  uint64
	// Digest is the register digest here.
	Digest []byte
}

// RecordingOf identifies the recording a tape holds: what its checkpoint
// file must belong to.
func RecordingOf(h *tape.Header) Recording {
	mem := h.MemBytes
	if mem == 0 {
		mem = vmm.DefaultMemBytes
	}
	return Recording{ImageSHA256: h.Image.SHA256, Created: h.Created, MemBytes: mem}
}

// Digest encodes a register digest (vmm.Machine.RegsDigest) as a
// checkpoint keeps it.
func Digest(d uint64) []byte { return binary.LittleEndian.AppendUint64(nil, d) }

// EngineState is where the replay engine is at a checkpoint: the tape
// events applied and the last one's position, the branch-counter target
// set, the record clock, and how far the guest kit's trace ring has been
// read (and what of it was lost).
type EngineState struct {
	Applied      uint64
	Last         tape.Position
	Target       uint64
	Clock        tape.RecordClock
	TraceDrained uint64
	TraceLost    uint64
}

// Summary describes a checkpoint file: what a replay chooses its start
// from.
type Summary struct {
	Time   time.Duration
	Events uint64
	Pos    vmm.Position
	Stop   vmm.Stop
	Bytes  int64 // the file's bytes this checkpoint added (its new pages and state)
}

// Compare orders two checkpoints of one run by where they are: the tape
// events applied before them, then their position.
func Compare(a, b Summary) int {
	return cmp.Or(cmp.Compare(a.Events, b.Events), cmp.Compare(a.Pos.Exit, b.Pos.Exit), cmp.Compare(a.Pos.Branch, b.Pos.Branch))
}

// DiskOf is what the guest has written to m's disk, nil for a machine
// without one.
func DiskOf(m *vmm.Machine) (*Disk, error) {
	written, chunks, ok, err := m.DiskWrites()
	if !ok || err != nil {
		return nil, err
	}
	return &Disk{Written: written, Chunks: chunks}, nil
}

// RestoreDisk writes d back into m's disk; a checkpoint of a machine with
// a disk has one, of a machine without has none.
func RestoreDisk(m *vmm.Machine, d *Disk) error {
	switch {
	case d == nil && m.HasDisk():
		return errors.New("checkpoint: no disk writes for a machine with a disk")
	case d == nil:
		return nil
	}
	return m.RestoreDiskWrites(d.Written, d.Chunks)
}
