package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Value is the part of an event stored in its value; everything else is in
// the key.
type Value struct {
	Time  int64 // nanoseconds
	Probe uint32
	Addr  uint64
	Args  []uint64
	Stack []uint64
}

// AppendValue appends v's encoding to dst:
//
//	version u8 | time varint | probe uvarint | addr uvarint |
//	nargs uvarint | args uvarint... | nstack uvarint | stack Δ varint...
//
// Stack entries are zig-zag varints of the wrapping difference from the
// previous entry, the first one from Addr: return addresses sit close to
// each other and to the sampled RIP, so most take two or three bytes.
func AppendValue(dst []byte, v *Value) []byte {
	dst = append(dst, SchemaVersion)
	dst = binary.AppendVarint(dst, v.Time)
	dst = binary.AppendUvarint(dst, uint64(v.Probe))
	dst = binary.AppendUvarint(dst, v.Addr)
	dst = binary.AppendUvarint(dst, uint64(len(v.Args)))
	for _, a := range v.Args {
		dst = binary.AppendUvarint(dst, a)
	}
	dst = binary.AppendUvarint(dst, uint64(len(v.Stack)))
	prev := v.Addr
	for _, pc := range v.Stack {
		dst = binary.AppendVarint(dst, int64(pc-prev))
		prev = pc
	}
	return dst
}

// DecodeValue decodes b into v, reusing v.Args and v.Stack's backing
// arrays. It rejects a wrong version byte, a truncated or overlong varint,
// a count the remaining bytes cannot hold, and trailing bytes. It is the
// hot path of every query, so it reads varints inline (fast path: one
// byte) and leaves the Reader, which says exactly what failed, to explain
// an error.
func DecodeValue(v *Value, b []byte) error {
	if err := decodeValue(v, b); err != nil {
		return explainValue(b)
	}
	return nil
}

var errBad = errors.New("bad value")

// uvarint is binary.Uvarint with the common short forms (one to three
// bytes: ids, counts, stack deltas) unrolled.
func uvarint(b []byte, off int) (uint64, int, error) {
	if off+3 <= len(b) {
		c0 := b[off]
		if c0 < 0x80 {
			return uint64(c0), off + 1, nil
		}
		c1 := b[off+1]
		if c1 < 0x80 {
			return uint64(c0&0x7f) | uint64(c1)<<7, off + 2, nil
		}
		if c2 := b[off+2]; c2 < 0x80 {
			return uint64(c0&0x7f) | uint64(c1&0x7f)<<7 | uint64(c2)<<14, off + 3, nil
		}
	}
	if off >= len(b) {
		return 0, off, errBad
	}
	x, n := binary.Uvarint(b[off:])
	if n <= 0 {
		return 0, off, errBad
	}
	return x, off + n, nil
}

func decodeValue(v *Value, b []byte) error {
	if len(b) == 0 || b[0] != SchemaVersion {
		return errBad
	}
	t, off, err := uvarint(b, 1)
	if err != nil {
		return err
	}
	v.Time = int64(t>>1) ^ -int64(t&1) // zig-zag
	p, off, err := uvarint(b, off)
	if err != nil || p > math.MaxUint32 {
		return errBad
	}
	v.Probe = uint32(p)
	if v.Addr, off, err = uvarint(b, off); err != nil {
		return err
	}
	n, off, err := uvarint(b, off)
	if err != nil || n > uint64(len(b)-off) {
		return errBad
	}
	v.Args = v.Args[:0]
	for range n {
		var a uint64
		if a, off, err = uvarint(b, off); err != nil {
			return err
		}
		v.Args = append(v.Args, a)
	}
	n, off, err = uvarint(b, off)
	if err != nil || n > uint64(len(b)-off) {
		return errBad
	}
	v.Stack = v.Stack[:0]
	prev := v.Addr
	for range n {
		var d uint64
		if d, off, err = uvarint(b, off); err != nil {
			return err
		}
		prev += uint64(int64(d>>1) ^ -int64(d&1))
		v.Stack = append(v.Stack, prev)
	}
	if off != len(b) {
		return errBad
	}
	return nil
}

// explainValue decodes b again with a Reader to say what is wrong with it.
func explainValue(b []byte) error {
	if err := checkValue(b); err != nil {
		return err
	}
	return errors.New("value does not decode") // not reached: the two decoders agree
}

// checkValue is the slow, explaining twin of decodeValue.
func checkValue(b []byte) error {
	r := NewReader(b)
	if ver := r.Byte("version"); r.Err() == nil && ver != SchemaVersion {
		return fmt.Errorf("value version %d, want %d", ver, SchemaVersion)
	}
	r.Varint("time")
	r.Uint32("probe")
	r.Uvarint("addr")
	for range r.Count("args count", 1) {
		r.Uvarint("arg")
	}
	for range r.Count("stack count", 1) {
		r.Varint("stack")
	}
	return r.Done()
}
