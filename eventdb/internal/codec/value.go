package codec

import (
	"encoding/binary"
	"fmt"
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
// a count the remaining bytes cannot hold, and trailing bytes.
func DecodeValue(v *Value, b []byte) error {
	r := NewReader(b)
	if ver := r.Byte("version"); r.Err() == nil && ver != SchemaVersion {
		return fmt.Errorf("value version %d, want %d", ver, SchemaVersion)
	}
	v.Time = r.Varint("time")
	v.Probe = r.Uint32("probe")
	v.Addr = r.Uvarint("addr")
	n := r.Count("args count", 1)
	v.Args = v.Args[:0]
	for range n {
		v.Args = append(v.Args, r.Uvarint("arg"))
	}
	n = r.Count("stack count", 1)
	v.Stack = v.Stack[:0]
	prev := v.Addr
	for range n {
		prev += uint64(r.Varint("stack"))
		v.Stack = append(v.Stack, prev)
	}
	return r.Done()
}
