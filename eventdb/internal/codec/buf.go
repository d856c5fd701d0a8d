package codec

import (
	"encoding/binary"
	"fmt"
	"math"
)

// AppendString appends a uvarint length and the string's bytes.
func AppendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendBool appends one byte, 1 for true.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// Reader decodes the primitives of a value. It never panics: the first
// failure is kept, later reads return zero values, and Err (or Done)
// reports what failed, naming the field and the byte offset.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader over b.
func NewReader(b []byte) Reader { return Reader{b: b} }

func (r *Reader) fail(field, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at byte %d: %s", field, r.off, fmt.Sprintf(format, args...))
	}
}

// Err returns the first failure.
func (r *Reader) Err() error { return r.err }

// More reports whether bytes are left to read (an optional trailing
// section follows).
func (r *Reader) More() bool { return r.err == nil && r.off < len(r.b) }

// Done returns the first failure, or an error if bytes are left over.
func (r *Reader) Done() error {
	if r.err == nil && r.off != len(r.b) {
		r.err = fmt.Errorf("%d trailing bytes at byte %d", len(r.b)-r.off, r.off)
	}
	return r.err
}

// Byte reads one byte.
func (r *Reader) Byte(field string) byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail(field, "truncated")
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

// Bool reads a byte that must be 0 or 1.
func (r *Reader) Bool(field string) bool {
	switch c := r.Byte(field); c {
	case 0:
		return false
	case 1:
		return true
	default:
		r.fail(field, "bool byte %d", c)
		return false
	}
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint(field string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		if n == 0 {
			r.fail(field, "truncated varint")
		} else {
			r.fail(field, "varint overflows 64 bits")
		}
		return 0
	}
	r.off += n
	return v
}

// Uint32 reads an unsigned varint that must fit in 32 bits.
func (r *Reader) Uint32(field string) uint32 {
	v := r.Uvarint(field)
	if v > math.MaxUint32 {
		r.fail(field, "%d overflows 32 bits", v)
		return 0
	}
	return uint32(v)
}

// Varint reads a zig-zag signed varint (encoding/binary's).
func (r *Reader) Varint(field string) int64 {
	u := r.Uvarint(field)
	return int64(u>>1) ^ -int64(u&1)
}

// Count reads a uvarint count of items each at least minSize bytes long,
// and fails if the bytes left cannot hold that many, so a damaged count
// never causes a huge allocation.
func (r *Reader) Count(field string, minSize int) int {
	start := r.off
	v := r.Uvarint(field)
	if r.err != nil {
		return 0
	}
	if left := uint64(len(r.b) - r.off); v > left/uint64(minSize) {
		r.off = start
		r.fail(field, "count %d does not fit in the %d bytes left after it", v, left)
		return 0
	}
	return int(v)
}

// String reads a uvarint length and that many bytes.
func (r *Reader) String(field string) string {
	n := r.Count(field, 1)
	if r.err != nil {
		return ""
	}
	s := string(r.b[r.off : r.off+n])
	r.off += n
	return s
}
