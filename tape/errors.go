package tape

import (
	"errors"
	"fmt"
)

// ErrNotTape says a file does not start with the tape magic. The reader
// never returns it bare: it comes wrapped in a *CorruptError at offset 0,
// so errors.Is(err, ErrNotTape) and errors.As(err, &corrupt) both hold.
var ErrNotTape = errors.New("tape: not a reprise tape (bad magic)")

// CorruptError is a tape whose bytes are present but wrong: a bad magic, a
// checksum mismatch, an impossible length, an event that does not decode or
// breaks the rules Append enforces, a format version newer than this
// reader. Everything the reader returned before it is intact.
type CorruptError struct {
	Offset int64  // byte offset in the file of the damaged block or event
	Chunk  int    // index of the chunk, or -1 in the file header
	Event  int    // index of the event within its chunk, or -1
	Reason string // what is wrong, e.g. "payload crc mismatch"

	cause error // ErrNotTape, for errors.Is
}

func (e *CorruptError) Error() string {
	var where string
	switch {
	case e.Chunk < 0:
		where = "header"
	case e.Event < 0:
		where = fmt.Sprintf("chunk %d", e.Chunk)
	default:
		where = fmt.Sprintf("chunk %d, event %d", e.Chunk, e.Event)
	}
	return fmt.Sprintf("tape: corrupt at byte %d (%s): %s", e.Offset, where, e.Reason)
}

// Unwrap returns ErrNotTape for a file that is not a tape at all, else nil.
func (e *CorruptError) Unwrap() error { return e.cause }

// TruncatedError is a tape that ends in the middle of a block: what a
// recorder killed mid-write leaves. Everything before Offset is intact and
// was returned; the partial block at Offset is ignored.
//
// A tape cut exactly between two chunks is not truncated in this sense: it
// reads as a shorter tape ending in io.EOF. Only an End event tells a
// finished recording from one that was cut.
type TruncatedError struct {
	Offset int64  // where the incomplete block starts (the length of the valid prefix)
	Chunk  int    // index of the incomplete chunk, or -1 if the cut is in the file header
	Events uint64 // events read before the cut

	block  string // "file prefix", "header block", "image block" when Chunk is -1
	detail string // how much of the block is present
}

func (e *TruncatedError) Error() string {
	if e.Chunk < 0 {
		return fmt.Sprintf("tape: truncated at byte %d: the file ends inside the %s (%s)", e.Offset, e.block, e.detail)
	}
	return fmt.Sprintf("tape: truncated at byte %d: the file ends inside chunk %d (%s); the %d events before it are intact",
		e.Offset, e.Chunk, e.detail, e.Events)
}

// IsDamaged reports whether err means a tape is damaged: bytes present but
// wrong anywhere (*CorruptError), or a file that ends inside its header
// (*TruncatedError in the header), which leaves nothing to replay. A file
// that is not a tape at all (ErrNotTape) is not a damaged tape, and a tape
// cut inside a chunk is not damaged in this sense either: it is what a
// killed recorder leaves, and everything before the cut is intact.
func IsDamaged(err error) bool {
	var (
		c *CorruptError
		t *TruncatedError
	)
	switch {
	case errors.Is(err, ErrNotTape):
		return false
	case errors.As(err, &c):
		return true
	}
	return errors.As(err, &t) && t.Chunk < 0
}
