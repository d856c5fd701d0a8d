package tape

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync/atomic"
)

// Reader reads a tape sequentially. Next returns each event in order, then
// io.EOF, or the error that stopped it: a *TruncatedError if the file ends
// inside a block (a recorder killed mid-write: every event returned before
// is valid), a *CorruptError for damage. The error sticks: Next keeps
// returning it.
//
// A Reader never trusts a length before checking it against the format's
// limits and its frame's checksum, and grows its buffers only as data
// actually arrives, so a damaged or hostile tape costs memory in proportion
// to its size.
type Reader struct {
	r     io.Reader
	c     io.Closer   // closed by Close if Open opened the file
	file  io.ReaderAt // the file Open opened, for Events and Whole
	size  int64       // its size when opened
	h     *Header
	off   int64 // bytes consumed
	start int64 // where the chunks start: the size of the file header
	err   error // sticky

	chunk    int    // index of the current chunk, -1 before the first
	chunks   int    // chunks whose checksums verified
	chunkOff int64  // file offset of the current chunk's payload
	buf      []byte // payload buffer, reused
	dec      decoder
	d        deltas
	left     uint32 // events of the current chunk not yet returned
	index    int    // index in the chunk of the next event
	events   uint64 // events returned
	ended    bool   // the end event was returned

	onHost     func(count uint32, body []byte) error
	hostFrames int

	frame [frameSize]byte
}

var errReaderClosed = errors.New("tape: reader closed")

// opens counts the tapes Open has opened in this process.
var opens atomic.Int64

// Opens is how many tapes Open has opened in this process: a command
// opens its tape once and reads it through that one Reader (Events,
// Whole), which tests check by this count.
func Opens() int64 { return opens.Load() }

// Open opens the tape at path and reads and validates its header.
func Open(path string) (*Reader, error) {
	opens.Add(1)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tape: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("tape: %w", err)
	}
	// Read through a section, not the file's own offset, so that Events
	// and Whole can read the same file at theirs meanwhile; unbounded, as
	// the file itself is (a tape may still grow).
	r, err := NewReader(io.NewSectionReader(f, 0, math.MaxInt64))
	if err != nil {
		f.Close()
		return nil, err
	}
	r.c, r.file, r.size = f, f, st.Size()
	return r, nil
}

// Events is a new Reader of the events of the tape r read the header of,
// from the first chunk on: the header is r's, not read again, and the
// file is r's, read at the new Reader's own offsets (several replays of
// one tape read it at once). It needs a Reader that Open made, and ends
// with it: closing it leaves the file open, and closing r closes the
// file for both.
func (r *Reader) Events() (*Reader, error) {
	if r.file == nil {
		return nil, errors.New("tape: Events needs a tape Open opened")
	}
	return &Reader{r: io.NewSectionReader(r.file, r.start, math.MaxInt64), h: r.h, off: r.start, start: r.start, chunk: -1}, nil
}

// Whole is the whole tape file Open opened (to hash it), read at its own
// offsets.
func (r *Reader) Whole() (io.Reader, error) {
	if r.file == nil {
		return nil, errors.New("tape: Whole needs a tape Open opened")
	}
	return io.NewSectionReader(r.file, 0, math.MaxInt64), nil
}

// Size is the size of the file Open opened, when it was opened (0 for a
// Reader NewReader made).
func (r *Reader) Size() int64 { return r.size }

// NewReader reads and validates a tape's header from r.
func NewReader(r io.Reader) (*Reader, error) {
	tr := &Reader{r: r, chunk: -1}
	if err := tr.readHeader(); err != nil {
		return nil, err
	}
	return tr, nil
}

// Header returns the tape's header.
func (r *Reader) Header() *Header { return r.h }

// Offset is how many bytes of the tape the reader has consumed (whole
// chunks are read at once), for progress reports.
func (r *Reader) Offset() int64 { return r.off }

// Close closes the file if Open opened it. Next then returns an error.
func (r *Reader) Close() error {
	if r.err == nil || r.err == io.EOF {
		r.err = errReaderClosed
	}
	if c := r.c; c != nil {
		r.c = nil
		if err := c.Close(); err != nil {
			return fmt.Errorf("tape: %w", err)
		}
	}
	return nil
}

func (r *Reader) readHeader() error {
	var p [prefixSize]byte
	n, err := r.read(p[:])
	if m := min(n, len(magic)); !bytes.Equal(p[:m], magic[:m]) {
		return &CorruptError{Offset: 0, Chunk: -1, Event: -1, Reason: "not a reprise tape (bad magic)", cause: ErrNotTape}
	}
	if err != nil {
		return r.cut(err, 0, -1, "file prefix", fmt.Sprintf("%d of its %d bytes present", n, prefixSize))
	}
	version, ok := parsePrefix(p[:])
	switch {
	case !ok:
		return r.corrupt(0, -1, -1, "file prefix crc mismatch")
	case version == 0:
		return r.corrupt(int64(len(magic)), -1, -1, "format version 0")
	case version > FormatVersion:
		return r.corrupt(int64(len(magic)), -1, -1, fmt.Sprintf(
			"format version %d is newer than this reader's (%d): use a newer reprise", version, FormatVersion))
	}

	hoff := r.off
	_, body, err := r.readFrame(tagHeader, [4]byte{}, -1, nil, func(f frame) string {
		return checkLength(f, maxHeaderBytes, "header")
	})
	if err != nil {
		return err
	}
	h, size, why := decodeHeader(body, version)
	if why != "" {
		return r.corrupt(hoff, -1, -1, why)
	}

	ioff := r.off
	_, img, err := r.readFrame(tagImage, [4]byte{}, -1, nil, func(f frame) string {
		if why := checkLength(f, maxImageBytes, "image"); why != "" {
			return why
		}
		if uint64(f.length) != size {
			return fmt.Sprintf("image block of %d bytes, the header says %d", f.length, size)
		}
		return ""
	})
	if err != nil {
		return err
	}
	if len(img) > 0 {
		h.Image.Bytes = img
	}
	if len(img) > 0 || h.Image.SHA256 != ([32]byte{}) {
		if got := sha256.Sum256(img); got != h.Image.SHA256 {
			return r.corrupt(ioff, -1, -1, fmt.Sprintf("image sha256 %x does not match the header's %x", got[:6], h.Image.SHA256[:6]))
		}
	}
	if err := r.readPacked(h); err != nil {
		return err
	}
	r.h, r.start = h, r.off
	return nil
}

// readPacked reads the FILE frames of a Linux program's packed files, in
// the header's order, each checked against its recorded size and hash.
func (r *Reader) readPacked(h *Header) error {
	if h.Linux == nil {
		return nil
	}
	var total int64
	for i := range h.Linux.Files {
		f := &h.Linux.Files[i]
		if f.Data == nil {
			continue
		}
		off := r.off
		_, body, err := r.readFrame(tagFile, [4]byte{}, -1, nil, func(fr frame) string {
			switch {
			case fr.count != uint32(i):
				return fmt.Sprintf("packed file frame for file %d where file %d's was due", fr.count, i)
			case int64(fr.length) != f.Size:
				return fmt.Sprintf("packed file %q of %d bytes, the header says %d", f.Host, fr.length, f.Size)
			case total+int64(fr.length) > MaxPackedBytes:
				return fmt.Sprintf("packed files of more than the %d bytes a tape holds", MaxPackedBytes)
			}
			return ""
		})
		if err != nil {
			return err
		}
		if sha256.Sum256(body) != f.SHA256 {
			return r.corrupt(off, -1, -1, fmt.Sprintf("packed file %q does not match its recorded SHA-256", f.Host))
		}
		total += int64(len(body))
		if body == nil {
			body = []byte{} // an empty file, packed: nil would say it is not
		}
		f.Data = body
	}
	return nil
}

func checkLength(f frame, max uint32, what string) string {
	switch {
	case f.count != 0:
		return fmt.Sprintf("%s frame with a count of %d", what, f.count)
	case f.length > max:
		return fmt.Sprintf("%s of %d bytes, more than the %d a tape holds", what, f.length, max)
	}
	return ""
}

// Next returns the next event; see Reader for the errors.
func (r *Reader) Next() (*Event, error) {
	if r.err != nil {
		return nil, r.err
	}
	for r.left == 0 {
		if err := r.nextChunk(); err != nil {
			r.err = err
			return nil, err
		}
	}
	start := r.chunkOff + int64(r.dec.i)
	e, why := decodeEvent(&r.dec, &r.d)
	if why == "" && r.ended {
		why = "an event after the end event"
	}
	if why != "" {
		r.err = r.corrupt(start, r.chunk, r.index, why)
		return nil, r.err
	}
	r.left--
	r.index++
	if r.left == 0 && r.dec.i != len(r.dec.b) {
		r.err = r.corrupt(r.chunkOff+int64(r.dec.i), r.chunk, -1,
			fmt.Sprintf("%d bytes left after the chunk's %d events", len(r.dec.b)-r.dec.i, r.index))
		return nil, r.err
	}
	r.ended = e.Kind == KindEnd
	r.events++
	return e, nil
}

// nextChunk reads and verifies the next chunk, handing the host frames
// before it to the OnHost function.
func (r *Reader) nextChunk() error {
	var host [4]byte
	if r.h.Version >= 3 {
		host = tagHost
	}
	for {
		start := r.off
		f, payload, err := r.readFrame(tagChunk, host, r.chunk+1, r.buf, func(f frame) string {
			switch {
			case f.tag == tagHost && (f.length == 0 || f.length > maxPayloadBytes || f.count == 0):
				return fmt.Sprintf("host frame of %d records in %d bytes (want 1 to %d bytes, at least one record)", f.count, f.length, maxPayloadBytes)
			case f.tag == tagHost:
				return ""
			case r.ended:
				return "a chunk after the end event"
			case f.length == 0 || f.length > maxPayloadBytes:
				return fmt.Sprintf("chunk payload of %d bytes (want 1 to %d)", f.length, maxPayloadBytes)
			case f.count == 0 || uint64(f.count)*minEventBytes > uint64(f.length):
				return fmt.Sprintf("%d events cannot fit %d payload bytes", f.count, f.length)
			}
			return ""
		})
		if err != nil {
			return err
		}
		r.buf = payload
		if f.tag == tagHost {
			r.hostFrames++
			if r.onHost != nil {
				if err := r.onHost(f.count, payload); err != nil {
					return fmt.Errorf("tape: host frame at byte %d: %w", start, err)
				}
			}
			continue
		}
		r.chunk++
		r.chunks++
		r.chunkOff = start + frameSize
		r.dec = decoder{b: payload, version: r.h.Version}
		r.d = deltas{}
		r.left = f.count
		r.index = 0
		return nil
	}
}

// OnHost sets the function that receives each host frame (the recording
// host's own trace: count records in body, opaque to this package) as the
// reader passes it. The body is only valid during the call. Without one,
// host frames are verified and skipped.
func (r *Reader) OnHost(fn func(count uint32, body []byte) error) { r.onHost = fn }

// HostFrames returns the number of host frames read so far.
func (r *Reader) HostFrames() int { return r.hostFrames }

// readFrame reads one frame: its header, checked by crc and then by check,
// and its body, checked by crc. chunk is the chunk's index or -1 in the
// file header. buf is reused for the body if large enough. At a clean end
// of file before a chunk it returns io.EOF.
func (r *Reader) readFrame(tag, also [4]byte, chunk int, buf []byte, check func(frame) string) (frame, []byte, error) {
	start := r.off
	what := tagName(tag)
	n, err := r.read(r.frame[:])
	if t := [4]byte(r.frame[:4]); n >= 4 && t == also {
		what = tagName(also)
	}
	if err != nil {
		if n == 0 && chunk >= 0 && err == io.EOF {
			return frame{}, nil, io.EOF
		}
		return frame{}, nil, r.cut(err, start, chunk, what+" block", fmt.Sprintf("%d of its %d frame-header bytes present", n, frameSize))
	}
	f, why := parseFrame(r.frame[:], tag, also)
	if why == "" {
		why = check(f)
	}
	if why != "" {
		return f, nil, r.corrupt(start, chunk, -1, why)
	}
	body, err := r.readBody(buf, int(f.length))
	if err != nil {
		return f, nil, r.cut(err, start, chunk, what+" block", fmt.Sprintf("%d of its %d bytes present",
			frameSize+len(body), frameSize+int(f.length)))
	}
	if crc(body) != f.bodyCRC {
		return f, nil, r.corrupt(start, chunk, -1, what+" crc mismatch")
	}
	return f, body, nil
}

// readBody reads n bytes into buf if it is large enough, else into a
// buffer grown as the data arrives, so a corrupt length costs nothing
// until the bytes are really there.
func (r *Reader) readBody(buf []byte, n int) ([]byte, error) {
	if cap(buf) >= n {
		k, err := r.read(buf[:n])
		return buf[:k], err
	}
	buf = buf[:0]
	for len(buf) < n {
		step := min(n-len(buf), max(len(buf), 64<<10))
		buf = slices.Grow(buf, step)
		k, err := r.read(buf[len(buf) : len(buf)+step])
		buf = buf[:len(buf)+k]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// read fills p, counting the bytes consumed.
func (r *Reader) read(p []byte) (int, error) {
	n, err := io.ReadFull(r.r, p)
	r.off += int64(n)
	return n, err
}

// cut turns a short read into a *TruncatedError, other read errors into
// an I/O error naming the offset.
func (r *Reader) cut(err error, off int64, chunk int, block, detail string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return &TruncatedError{Offset: off, Chunk: chunk, Events: r.events, block: block, detail: detail}
	}
	return fmt.Errorf("tape: read at byte %d: %w", r.off, err)
}

func (r *Reader) corrupt(off int64, chunk, event int, why string) error {
	return &CorruptError{Offset: off, Chunk: chunk, Event: event, Reason: why}
}
