package hostview

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Encoder appends records to a frame body, delta-coding time and exit
// ordinals against the previous record of the same body.
type Encoder struct {
	buf      []byte
	n        uint32
	lastTime int64
	lastExit uint64
}

// Add appends r. It rejects a record that sets a field its kind does not
// carry, so that what a Decoder returns is exactly what was added.
func (e *Encoder) Add(r *Record) error {
	if !r.Kind.valid() {
		return fmt.Errorf("hostview: unknown record kind %d", uint8(r.Kind))
	}
	if len(r.Text) > MaxText {
		return fmt.Errorf("hostview: %v record with %d bytes of text (at most %d)", r.Kind, len(r.Text), MaxText)
	}
	if r.Dur < 0 {
		return fmt.Errorf("hostview: %v record with a negative duration %d", r.Kind, r.Dur)
	}
	f := present(r)
	if extra := f &^ fieldsOf[r.Kind]; extra != 0 {
		return fmt.Errorf("hostview: %v record with fields it does not carry (%#x)", r.Kind, extra)
	}
	b := append(e.buf, byte(r.Kind), f)
	b = binary.AppendVarint(b, r.Time-e.lastTime)
	e.lastTime = r.Time
	if f&fDur != 0 {
		b = binary.AppendUvarint(b, uint64(r.Dur))
	}
	if f&fExit != 0 {
		b = binary.AppendVarint(b, int64(r.Exit-e.lastExit))
		e.lastExit = r.Exit
	}
	for _, v := range [...]struct {
		bit uint8
		v   uint32
	}{{fCPU, r.CPU}, {fTID, r.TID}, {fNext, r.Next}, {fCode, r.Code}} {
		if f&v.bit != 0 {
			b = binary.AppendUvarint(b, uint64(v.v))
		}
	}
	if f&fArg != 0 {
		b = binary.AppendUvarint(b, r.Arg)
	}
	if f&fText != 0 {
		b = binary.AppendUvarint(b, uint64(len(r.Text)))
		b = append(b, r.Text...)
	}
	e.buf = b
	e.n++
	return nil
}

func present(r *Record) uint8 {
	var f uint8
	set := func(bit uint8, nonzero bool) {
		if nonzero {
			f |= bit
		}
	}
	set(fDur, r.Dur != 0)
	set(fExit, r.Exit != 0)
	set(fCPU, r.CPU != 0)
	set(fTID, r.TID != 0)
	set(fNext, r.Next != 0)
	set(fCode, r.Code != 0)
	set(fArg, r.Arg != 0)
	set(fText, r.Text != "")
	return f
}

// Len returns the records added since the last Reset.
func (e *Encoder) Len() uint32 { return e.n }

// Bytes returns the body so far; it is valid until the next Add or Reset.
func (e *Encoder) Bytes() []byte { return e.buf }

// Reset starts a new body.
func (e *Encoder) Reset() { *e = Encoder{buf: e.buf[:0]} }

// Decode returns the count records of a frame body, or an error naming
// the first record that does not decode.
func Decode(body []byte, count uint32) ([]Record, error) {
	d := decoder{b: body}
	// Every record takes at least three bytes: do not trust count further.
	if uint64(count)*3 > uint64(len(body)) {
		return nil, fmt.Errorf("hostview: %d records cannot fit %d bytes", count, len(body))
	}
	recs := make([]Record, count)
	var lastTime int64
	var lastExit uint64
	for i := range recs {
		r := &recs[i]
		r.Kind = Kind(d.byte())
		f := d.byte()
		if d.err == nil && !r.Kind.valid() {
			return nil, fmt.Errorf("hostview: record %d: unknown kind %d", i, uint8(r.Kind))
		}
		if d.err == nil && f&^fieldsOf[r.Kind] != 0 {
			return nil, fmt.Errorf("hostview: record %d: %v record with fields it does not carry (%#x)", i, r.Kind, f&^fieldsOf[r.Kind])
		}
		lastTime += d.varint()
		r.Time = lastTime
		if f&fDur != 0 {
			r.Dur = int64(d.uvarint())
			if r.Dur < 0 {
				d.fail("negative duration")
			}
		}
		if f&fExit != 0 {
			lastExit += uint64(d.varint())
			r.Exit = lastExit
		}
		for _, v := range [...]struct {
			bit uint8
			p   *uint32
		}{{fCPU, &r.CPU}, {fTID, &r.TID}, {fNext, &r.Next}, {fCode, &r.Code}} {
			if f&v.bit != 0 {
				*v.p = d.uint32()
			}
		}
		if f&fArg != 0 {
			r.Arg = d.uvarint()
		}
		if f&fText != 0 {
			r.Text = d.text()
		}
		if d.err == nil && present(r) != f {
			d.fail("a field marked present is zero") // one encoding per record
		}
		if d.err != nil {
			return nil, fmt.Errorf("hostview: record %d (%v): %w", i, r.Kind, d.err)
		}
	}
	if d.i != len(body) {
		return nil, fmt.Errorf("hostview: %d bytes left after %d records", len(body)-d.i, count)
	}
	return recs, nil
}

var errShort = errors.New("body ends inside the record")

// decoder reads a body; the first failure sticks in err.
type decoder struct {
	b   []byte
	i   int
	err error
}

func (d *decoder) fail(why string) {
	if d.err == nil {
		d.err = errors.New(why)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || d.i >= len(d.b) {
		d.fail(errShort.Error())
		return 0
	}
	d.i++
	return d.b[d.i-1]
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.i:])
	if n <= 0 || (n > 1 && d.b[d.i+n-1] == 0) { // overlong: one encoding per value
		d.fail("bad varint")
		return 0
	}
	d.i += n
	return v
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) uint32() uint32 {
	v := d.uvarint()
	if v > 1<<32-1 {
		d.fail("field out of range")
	}
	return uint32(v)
}

func (d *decoder) text() string {
	n := d.uvarint()
	if d.err == nil && (n > MaxText || n > uint64(len(d.b)-d.i)) {
		d.fail(fmt.Sprintf("text of %d bytes", n))
	}
	if d.err != nil {
		return ""
	}
	s := string(d.b[d.i : d.i+int(n)])
	d.i += int(n)
	return s
}
