package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"
)

// CorruptError is damage in a checkpoint file: where, and what.
type CorruptError struct {
	Path   string
	Offset int64
	Msg    string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("checkpoint file %s: at byte %d: %s", e.Path, e.Offset, e.Msg)
}

// IsDamaged reports whether err is damage in a checkpoint file.
func IsDamaged(err error) bool {
	var ce *CorruptError
	return errors.As(err, &ce)
}

// File is an opened checkpoint file: the checkpoints it lists, loaded one
// at a time.
type File struct {
	path   string
	f      *os.File
	rec    Recording
	dec    *zstd.Decoder
	blocks []pageBlock // PAGE frames in order
	ckpts  []ckptFrame
	damage error         // where the index stopped, nil if at the file's end
	pages  uint32        // page ids the file holds: 0 (zeros) to pages-1
	sdec   *zstd.Decoder // the index's, reading the start of CKPT bodies
	piece  []byte        // the index's buffer for checking PAGE frames
	// end is where the index's walk stopped: the next frame's offset;
	// last, where the last checkpoint's frame ended.
	end, last int64
}

// pageBlock is a PAGE frame: pages [first, first+count) of the file.
type pageBlock struct {
	first, count uint32
	off          int64 // of the compressed pages
	size         uint32
}

type ckptFrame struct {
	off  int64 // of its body
	size uint32
	sum  Summary
}

// Open reads the index of the checkpoint file at path — every frame's
// header and checksum, every checkpoint's place — and checks that it
// belongs to the recording rec.
func Open(path string, rec Recording) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxMeta), zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		f.Close()
		return nil, err
	}
	sdec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxMeta))
	if err != nil {
		dec.Close()
		f.Close()
		return nil, err
	}
	cf := &File{path: path, f: f, dec: dec, sdec: sdec}
	if err := cf.index(rec); err != nil {
		cf.Close()
		return nil, err
	}
	return cf, nil
}

// Close closes the file.
func (cf *File) Close() error {
	cf.dec.Close()
	cf.sdec.Close()
	return cf.f.Close()
}

// Damage is the damage the index stopped at, nil for a whole file: the
// checkpoints listed are those before it, each whole (a recorder killed
// while writing one leaves a file cut inside it).
func (cf *File) Damage() error { return cf.damage }

// Checkpoints lists the checkpoints in order.
func (cf *File) Checkpoints() []Summary {
	out := make([]Summary, len(cf.ckpts))
	for i, c := range cf.ckpts {
		out[i] = c.sum
	}
	return out
}

func (cf *File) corrupt(off int64, format string, args ...any) error {
	return &CorruptError{Path: cf.path, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// index walks the frames. Damage after the HEAD frame ends the walk: the
// checkpoints before it are kept, and it is the file's Damage.
func (cf *File) index(rec Recording) error {
	err := cf.walk(rec)
	if IsDamaged(err) && cf.rec != (Recording{}) {
		cf.damage = err
		return nil
	}
	return err
}

func (cf *File) walk(rec Recording) error {
	m := make([]byte, len(magic))
	if _, err := io.ReadFull(cf.f, m); err != nil || !bytes.Equal(m, magic) {
		return cf.corrupt(0, "not a reprise checkpoint file")
	}
	cf.end, cf.last, cf.pages = int64(len(magic)), int64(len(magic)), 1 // page id 0 is the zero page
	if err := cf.walkOn(rec); err != nil {
		return err
	}
	if cf.rec == (Recording{}) {
		return cf.corrupt(cf.end, "no HEAD frame")
	}
	return nil
}

// Refresh indexes the frames written to the file since it was opened or
// last refreshed: a file one writer adds to while the checkpoints it
// wrote are read (a debugging session's own). Damage there is an error.
func (cf *File) Refresh() error {
	if cf.damage != nil {
		return cf.damage
	}
	return cf.walkOn(cf.rec)
}

// walkOn indexes the frames from cf.end to the file's end.
func (cf *File) walkOn(rec Recording) error {
	for {
		off := cf.end
		tag, body, size, err := cf.frameAt(off)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		bodyOff := off + 12
		sawHead := cf.rec != (Recording{})
		switch {
		case !sawHead && tag != tagHead:
			return cf.corrupt(off, "the file does not start with its HEAD frame")
		case tag == tagHead:
			if sawHead {
				return cf.corrupt(off, "a second HEAD frame")
			}
			var h head
			if err := json.Unmarshal(body, &h); err != nil {
				return cf.corrupt(bodyOff, "HEAD: %v", err)
			}
			if h.Version != Version || h.PageSize != PageSize {
				return cf.corrupt(bodyOff, "format version %d with %d-byte pages (this reprise reads version %d, %d-byte pages)", h.Version, h.PageSize, Version, PageSize)
			}
			if h.Recording.ImageSHA256 != rec.ImageSHA256 || !h.Recording.Created.Equal(rec.Created) || h.Recording.MemBytes != rec.MemBytes {
				return fmt.Errorf("checkpoint: %s holds checkpoints of another recording (made %v, image sha256 %x…, %d bytes of RAM), not of this tape (made %v, image sha256 %x…, %d bytes of RAM)",
					cf.path, h.Recording.Created, h.Recording.ImageSHA256[:6], h.Recording.MemBytes, rec.Created, rec.ImageSHA256[:6], rec.MemBytes)
			}
			cf.rec = h.Recording
		case tag == tagPage:
			if size < 4 {
				return cf.corrupt(off, "PAGE frame of %d bytes", size)
			}
			n := binary.LittleEndian.Uint32(body[:4])
			if n == 0 || n > maxPagesInFrame {
				return cf.corrupt(bodyOff, "PAGE frame of %d pages (1 to %d)", n, maxPagesInFrame)
			}
			cf.blocks = append(cf.blocks, pageBlock{first: cf.pages, count: n, off: bodyOff + 4, size: size - 4})
			cf.pages += n
		case tag == tagCkpt:
			if len(cf.ckpts) >= maxCheckpoints {
				return cf.corrupt(off, "more than %d checkpoints", maxCheckpoints)
			}
			sum, err := cf.summaryOf(bodyOff, body)
			if err != nil {
				return err
			}
			sum.Bytes = bodyOff + int64(size) - cf.last
			cf.ckpts = append(cf.ckpts, ckptFrame{off: bodyOff, size: size, sum: sum})
			cf.last = bodyOff + int64(size)
		default:
			return cf.corrupt(off, "unknown frame %q", tag[:])
		}
		cf.end = bodyOff + int64(size)
	}
}

// frameAt reads the frame at off: its tag, its body (checked against its
// CRC) and the body's size. PAGE bodies are only checked, not kept.
func (cf *File) frameAt(off int64) ([4]byte, []byte, uint32, error) {
	var h [12]byte
	n, err := cf.f.ReadAt(h[:], off)
	if n == 0 && errors.Is(err, io.EOF) {
		return [4]byte{}, nil, 0, io.EOF
	}
	if n < len(h) {
		return [4]byte{}, nil, 0, cf.corrupt(off, "the file ends inside a frame header")
	}
	var tag [4]byte
	copy(tag[:], h[:4])
	size := binary.LittleEndian.Uint32(h[4:])
	if size > maxFrame {
		return tag, nil, 0, cf.corrupt(off, "a frame of %d bytes (at most %d)", size, maxFrame)
	}
	// The HEAD frame is a few hundred bytes of JSON: refuse a larger one
	// before reading it, not after decoding megabytes of it.
	if tag == tagHead && size > maxHead {
		return tag, nil, 0, cf.corrupt(off, "a HEAD frame of %d bytes (at most %d)", size, maxHead)
	}
	// A PAGE body is checked a piece at a time, and only its page count
	// kept: the index holds no frame's pages.
	keep := size
	if tag == tagPage {
		keep = min(size, 4)
	}
	body := make([]byte, keep)
	crc := crc32.New(castagnoli)
	if cf.piece == nil {
		cf.piece = make([]byte, 1<<20)
	}
	for at := uint32(0); at < size; {
		buf := cf.piece[:min(uint32(len(cf.piece)), size-at)]
		if at < keep {
			buf = body[at:]
		}
		if n, _ := cf.f.ReadAt(buf, off+12+int64(at)); n < len(buf) {
			return tag, nil, 0, cf.corrupt(off, "the file ends inside a %d-byte frame", size)
		}
		crc.Write(buf)
		at += uint32(len(buf))
	}
	if crc.Sum32() != binary.LittleEndian.Uint32(h[8:]) {
		return tag, nil, 0, cf.corrupt(off, "%s frame fails its checksum", tag[:])
	}
	return tag, body, size, nil
}

// smallFrame bounds a zstd frame that does not declare its size: the
// writer's encoder declares it for all but the smallest (under 256 bytes).
const smallFrame = 64 << 10

// inflate decompresses a frame's zstd body, refusing one of more than
// limit bytes: the size its zstd header declares is checked before a byte
// is decompressed, and the decoder stops there whatever the body holds.
func (cf *File) inflate(off int64, body []byte, limit int) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(body); err != nil {
		return nil, cf.corrupt(off, "zstd frame: %v", err)
	}
	size := uint64(min(limit, smallFrame))
	if h.HasFCS {
		size = h.FrameContentSize
	}
	if size > uint64(limit) {
		return nil, cf.corrupt(off, "a frame that decompresses to %d bytes (at most %d)", size, limit)
	}
	data, err := cf.dec.DecodeAll(body, make([]byte, 0, size))
	if err != nil || h.HasFCS && uint64(len(data)) != size {
		return nil, cf.corrupt(off, "a frame that does not decompress to the %d bytes it declares (%v)", size, err)
	}
	return data, nil
}

// summaryBytes bounds what the index decompresses of a CKPT body: the
// start of its JSON, where the checkpoint is (Checkpoint's first fields).
const summaryBytes = 4 << 10

// summaryOf reads where a CKPT body's checkpoint is — the fields its JSON
// begins with — decompressing only their bytes: opening a file costs its
// frames' headers and checksums, not their state (which Load decodes and
// checks).
func (cf *File) summaryOf(off int64, body []byte) (Summary, error) {
	var s Summary
	bad := func(err error) (Summary, error) {
		return s, cf.corrupt(off, "checkpoint does not begin with where it is: %v", err)
	}
	var h zstd.Header
	if err := h.Decode(body); err != nil {
		return bad(err)
	}
	if h.HasFCS && h.FrameContentSize > maxMeta {
		return s, cf.corrupt(off, "a checkpoint that decompresses to %d bytes (at most %d)", h.FrameContentSize, maxMeta)
	}
	if err := cf.sdec.Reset(bytes.NewReader(body)); err != nil {
		return bad(err)
	}
	d := json.NewDecoder(io.LimitReader(cf.sdec, summaryBytes))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return bad(fmt.Errorf("%v %v", t, err))
	}
	seen := map[string]bool{}
	for len(seen) < 4 {
		t, err := d.Token()
		if err != nil {
			return bad(err)
		}
		var field any
		switch t {
		case "Time":
			field = &s.Time
		case "Events":
			field = &s.Events
		case "Pos":
			field = &s.Pos
		case "Stop":
			field = &s.Stop
		}
		if field == nil || seen[t.(string)] {
			return bad(fmt.Errorf("field %v", t))
		}
		seen[t.(string)] = true
		if err := d.Decode(field); err != nil {
			return bad(err)
		}
	}
	return s, nil
}

// decodeCheckpoint decompresses and decodes a CKPT body.
func (cf *File) decodeCheckpoint(off int64, body []byte) (*checkpointBody, error) {
	meta, err := cf.inflate(off, body, maxMeta)
	if err != nil {
		return nil, err
	}
	var c checkpointBody
	if err := json.Unmarshal(meta, &c); err != nil {
		return nil, cf.corrupt(off, "checkpoint: %v", err)
	}
	if c.Machine == nil {
		return nil, cf.corrupt(off, "checkpoint without the machine's state")
	}
	if uint64(len(c.Pages))*PageSize != cf.rec.MemBytes {
		return nil, cf.corrupt(off, "checkpoint of %d pages, for %d bytes of RAM", len(c.Pages), cf.rec.MemBytes)
	}
	for _, id := range c.Pages {
		if id >= cf.pages {
			return nil, cf.corrupt(off, "checkpoint names page %d, which the file does not hold", id)
		}
	}
	if c.Disk != nil {
		for _, ch := range c.Disk.Chunks {
			if ch.Page >= cf.pages {
				return nil, cf.corrupt(off, "checkpoint names page %d, which the file does not hold", ch.Page)
			}
		}
	}
	return &c, nil
}

// Meta reads checkpoint i without its RAM.
func (cf *File) Meta(i int) (*Checkpoint, error) {
	c, err := cf.body(i)
	if err != nil {
		return nil, err
	}
	return &c.Checkpoint, nil
}

// body reads and decodes checkpoint i's frame.
func (cf *File) body(i int) (*checkpointBody, error) {
	if i < 0 || i >= len(cf.ckpts) {
		return nil, fmt.Errorf("checkpoint: %s has no checkpoint %d (it has %d)", cf.path, i, len(cf.ckpts))
	}
	cp := cf.ckpts[i]
	tag, body, _, err := cf.frameAt(cp.off - 12)
	if err != nil {
		return nil, err
	}
	if tag != tagCkpt {
		return nil, cf.corrupt(cp.off-12, "not the checkpoint it was")
	}
	return cf.decodeCheckpoint(cp.off, body)
}

// Load reads checkpoint i, writes its RAM into ram, and returns the
// disk's writes it holds (nil if its machine had no disk). Their sizes
// are the checkpoint's to claim: the caller checks them against the disk
// it restores them to.
func (cf *File) Load(i int, ram RAM) (*Checkpoint, *Disk, error) {
	if ram.Size() != cf.rec.MemBytes {
		return nil, nil, fmt.Errorf("checkpoint: RAM of %d bytes for checkpoints of %d", ram.Size(), cf.rec.MemBytes)
	}
	c, err := cf.body(i)
	if err != nil {
		return nil, nil, err
	}
	// RAM above reached is zero already: a checkpoint of a program that
	// used a little of a large RAM writes only that little.
	reached := ram.Reached()
	var ids []uint32
	var at []uint64
	for k, id := range c.Pages {
		if pa := uint64(k) * PageSize; id != 0 || pa < reached {
			ids, at = append(ids, id), append(at, pa)
		}
	}
	var bad error
	err = cf.readPages(ids, func(k int) []byte {
		b, err := ram.Slice(at[k], PageSize)
		if err != nil {
			bad = err
			return make([]byte, PageSize)
		}
		return b
	})
	if err := errors.Join(err, bad); err != nil {
		return nil, nil, err
	}
	disk, err := cf.disk(i, c.Disk)
	return &c.Checkpoint, disk, err
}

// RAM is what Load restores a checkpoint's RAM to: a machine's
// (memory.RAM), populated up to Reached and zero from there.
type RAM interface {
	Size() uint64
	Reached() uint64
	Slice(gpa, n uint64) ([]byte, error)
}

// disk reads the disk's writes checkpoint i holds.
func (cf *File) disk(i int, b *diskBody) (*Disk, error) {
	if b == nil {
		return nil, nil
	}
	d := &Disk{Written: b.Written, Chunks: make(map[uint64][]byte, len(b.Chunks))}
	ids := make([]uint32, len(b.Chunks))
	data := make([]byte, len(ids)*PageSize)
	for k, ch := range b.Chunks {
		if _, dup := d.Chunks[ch.Index]; dup {
			return nil, fmt.Errorf("checkpoint %d: disk chunk %d given twice", i, ch.Index)
		}
		ids[k] = ch.Page
		d.Chunks[ch.Index] = data[k*PageSize : (k+1)*PageSize]
	}
	if err := cf.readPages(ids, func(k int) []byte { return data[k*PageSize : (k+1)*PageSize] }); err != nil {
		return nil, err
	}
	return d, nil
}

// readPages fills dst(k) with page ids[k] for every k, reading each PAGE
// frame that holds any once.
func (cf *File) readPages(ids []uint32, dst func(k int) []byte) error {
	byBlock := map[int][]int{} // block → indices into ids
	for k, id := range ids {
		if id == 0 {
			clear(dst(k))
			continue
		}
		b := cf.blockOf(id)
		byBlock[b] = append(byBlock[b], k)
	}
	for b, ks := range byBlock {
		blk := cf.blocks[b]
		comp := make([]byte, blk.size)
		if _, err := cf.f.ReadAt(comp, blk.off); err != nil {
			return cf.corrupt(blk.off, "reading pages: %v", err)
		}
		data, err := cf.inflate(blk.off, comp, int(blk.count)*PageSize)
		if err != nil || len(data) != int(blk.count)*PageSize {
			return cf.corrupt(blk.off, "PAGE frame does not decompress to its %d pages", blk.count)
		}
		for _, k := range ks {
			at := int(ids[k]-blk.first) * PageSize
			copy(dst(k), data[at:at+PageSize])
		}
	}
	return nil
}

// blockOf finds the PAGE frame holding page id.
func (cf *File) blockOf(id uint32) int {
	lo, hi := 0, len(cf.blocks)
	for lo < hi {
		mid := (lo + hi) / 2
		if cf.blocks[mid].first+cf.blocks[mid].count <= id {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}
