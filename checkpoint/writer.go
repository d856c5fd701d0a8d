package checkpoint

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/reprise-vm/reprise/vmm"
	"github.com/reprise-vm/reprise/vmm/devices"
)

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	zeroPage   [PageSize]byte
)

// Writer writes a checkpoint file.
type Writer struct {
	f      *os.File
	w      *bufio.Writer
	enc    *zstd.Encoder
	ids    map[[32]byte]uint32 // page contents → id; 0 is the zero page, never stored
	next   uint32
	mem    uint64 // the recording's RAM size
	count  int
	offset int64
	err    error
	closed bool
	// restoreOnly: Capture keeps no SHA-256 of RAM (SkipPassChecks).
	restoreOnly bool
}

// SkipPassChecks has Capture leave a checkpoint's RAMHash out (zero): for
// a file whose checkpoints are only restored — a debugging session's own —
// and never met by a replay that checks its RAM against theirs. It spares
// a SHA-256 of the whole RAM each; a restore checks RAMSum.
func (w *Writer) SkipPassChecks() { w.restoreOnly = true }

// head is the HEAD frame's body.
type head struct {
	Version   int
	Recording Recording
	PageSize  int
}

// Create starts a checkpoint file at path for the recording rec,
// replacing one that is there.
func Create(path string, rec Recording) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		f.Close()
		return nil, err
	}
	w := &Writer{f: f, w: bufio.NewWriterSize(f, 1<<20), enc: enc, ids: map[[32]byte]uint32{}, next: 1, mem: rec.MemBytes}
	w.write(magic)
	body, _ := json.Marshal(head{Version: Version, Recording: rec, PageSize: PageSize})
	w.frame(tagHead, body)
	if err := w.flush(); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// checkpointBody is a CKPT frame's body, compressed.
type checkpointBody struct {
	Checkpoint
	Pages []uint32 // each RAM page's id
	// Disk, for a machine with a disk, is what the guest had written to
	// it: the overlay's bitmap of written sectors, and the page ids of
	// the DiskChunk-sized pieces that hold any.
	Disk *diskBody `json:",omitempty"`
}

type diskBody struct {
	Written []uint64
	Chunks  []diskChunk
}

type diskChunk struct {
	Index uint64 // the chunk's offset on the disk ÷ PageSize
	Page  uint32
}

// Disk is the guest's writes to its disk at a checkpoint: the bitmap of
// the sectors written (bit n of word n/64 for sector n) and the contents
// of each PageSize piece of the disk that holds any, by its index.
type Disk struct {
	Written []uint64
	Chunks  map[uint64][]byte
}

// framePages is how many new pages a PAGE frame takes: half of what a
// frame may hold, so that pages zstd cannot compress, which it stores a
// few bytes larger, still fit in a frame.
const framePages = maxPagesInFrame / 2

// SkipError is a checkpoint the file does not take: too large, or one
// too many. The writer stays usable, and a recording or a replay goes on
// without that checkpoint: its size is never a reason to lose one.
type SkipError struct{ Why string }

func (e *SkipError) Error() string { return "checkpoint: skipped: " + e.Why }

// pages stores page-sized pieces in the file, each distinct one once:
// the ids of those it holds already are reused; new ones are written in
// PAGE frames (flushed with flush).
type pages struct {
	w     *Writer
	fresh []byte
}

func (p *pages) id(page []byte) uint32 {
	if bytes.Equal(page, zeroPage[:]) {
		return 0 // most of a small program's RAM: compared, not hashed
	}
	w := p.w
	sum := sha256.Sum256(page)
	id, ok := w.ids[sum]
	if !ok {
		id, w.next = w.next, w.next+1
		w.ids[sum] = id
		p.fresh = append(p.fresh, page...)
		if len(p.fresh) == framePages*PageSize {
			p.flush()
		}
	}
	return id
}

func (p *pages) flush() {
	if len(p.fresh) > 0 {
		p.w.pageFrame(p.fresh)
		p.fresh = p.fresh[:0]
	}
}

// Add writes checkpoint c with RAM ram and, for a machine with a disk, its
// disk's writes: the pages the file does not hold yet, then the
// checkpoint. It returns the bytes it added. ram is RAM from its start up
// to where it is populated (memory.RAM.Populated): the rest of the
// recording's RAM is zero.
func (w *Writer) Add(c *Checkpoint, ram []byte, disk *Disk) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	if len(ram)%PageSize != 0 || uint64(len(ram)) > w.mem {
		return 0, fmt.Errorf("checkpoint: RAM of %d bytes is not whole pages of the recording's %d", len(ram), w.mem)
	}
	if w.count >= maxCheckpoints {
		return 0, &SkipError{fmt.Sprintf("the file holds %d checkpoints, as many as it can", maxCheckpoints)}
	}
	start := w.offset
	body := checkpointBody{Checkpoint: *c, Pages: make([]uint32, w.mem/PageSize)}
	store := pages{w: w}
	for i := range len(ram) / PageSize {
		body.Pages[i] = store.id(ram[i*PageSize : (i+1)*PageSize])
	}
	if disk != nil {
		body.Disk = &diskBody{Written: disk.Written}
		for _, i := range slices.Sorted(maps.Keys(disk.Chunks)) {
			if len(disk.Chunks[i]) != PageSize {
				return 0, fmt.Errorf("checkpoint: disk chunk %d of %d bytes", i, len(disk.Chunks[i]))
			}
			body.Disk.Chunks = append(body.Disk.Chunks, diskChunk{Index: i, Page: store.id(disk.Chunks[i])})
		}
	}
	store.flush()
	meta, err := json.Marshal(body)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	if len(meta) > maxMeta {
		return 0, &SkipError{fmt.Sprintf("the machine's state takes %d bytes, more than a checkpoint holds (%d)", len(meta), maxMeta)}
	}
	comp := w.enc.EncodeAll(meta, nil)
	if len(comp) > maxFrame {
		return 0, &SkipError{fmt.Sprintf("the machine's state compresses to %d bytes, more than a frame holds (%d)", len(comp), maxFrame)}
	}
	w.frame(tagCkpt, comp)
	w.count++
	if err := w.flush(); err != nil {
		return 0, err
	}
	return w.offset - start, nil
}

// Capture adds a checkpoint of m as it is now, between two entries —
// record time t, the engine's state st — and returns its summary. A
// machine whose disk has requests in flight is not captured (ok false):
// the caller tries again at a later stop, where a replay has the same
// requests in flight as the recording.
func (w *Writer) Capture(m *vmm.Machine, t time.Duration, st EngineState) (sum Summary, ok bool, err error) {
	snap, err := m.Snapshot()
	if errors.Is(err, devices.ErrDiskBusy) || errors.Is(err, vmm.ErrKernelBusy) {
		return Summary{}, false, nil
	}
	if err != nil {
		return Summary{}, false, err
	}
	disk, err := DiskOf(m)
	if err != nil {
		return Summary{}, false, err
	}
	var ramHash [32]byte
	if !w.restoreOnly {
		if ramHash, err = m.HashRAM(); err != nil {
			return Summary{}, false, err
		}
	}
	ramSum, err := m.RAMSum()
	if err != nil {
		return Summary{}, false, err
	}
	c := &Checkpoint{Time: t, Events: st.Applied, Pos: m.Position(), Stop: snap.LastStop, Machine: snap, Engine: st,
		RAMHash: ramHash, RAMSum: ramSum, Digest: Digest(m.RegsDigest())}
	n, err := w.Add(c, m.RAM().Populated(), disk)
	return Summary{Time: t, Events: c.Events, Pos: c.Pos, Stop: c.Stop, Bytes: n}, err == nil, err
}

// Schedule says when checkpoints are due: every Every of record time.
type Schedule struct {
	Every time.Duration
	next  time.Duration
}

// Due reports whether one is due at t.
func (s *Schedule) Due(t time.Duration) bool { return t >= s.next }

// Taken moves the next one past t.
func (s *Schedule) Taken(t time.Duration) {
	for s.next <= t {
		s.next += s.Every
	}
}

// pageFrame writes pages new to the file.
func (w *Writer) pageFrame(pages []byte) {
	var count [4]byte
	binary.LittleEndian.PutUint32(count[:], uint32(len(pages)/PageSize))
	w.frame(tagPage, append(count[:], w.enc.EncodeAll(pages, nil)...))
}

// Close finishes the file; closing it again does nothing.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	err := errors.Join(w.flush(), w.f.Close())
	w.enc.Close()
	if w.err == nil {
		w.err = errors.New("checkpoint: writer closed")
	}
	return err
}

func (w *Writer) frame(tag [4]byte, body []byte) {
	if len(body) > maxFrame {
		w.fail(fmt.Errorf("checkpoint: a %s frame of %d bytes (at most %d)", tag, len(body), maxFrame))
		return
	}
	var h [12]byte
	copy(h[:4], tag[:])
	binary.LittleEndian.PutUint32(h[4:], uint32(len(body)))
	binary.LittleEndian.PutUint32(h[8:], crc32.Checksum(body, castagnoli))
	w.write(h[:])
	w.write(body)
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(b)
	w.offset += int64(n)
	w.fail(err)
}

func (w *Writer) flush() error {
	if w.err == nil {
		w.fail(w.w.Flush())
	}
	return w.err
}

func (w *Writer) fail(err error) {
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("checkpoint: %w", err)
	}
}
