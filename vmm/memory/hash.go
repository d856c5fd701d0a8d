package memory

import (
	"bytes"
	"encoding/binary"
	"io"
)

// Hashing says what of RAM a hash of it takes in.
type Hashing uint8

const (
	// HashPages takes in each 4 KiB page holding a nonzero byte, in
	// address order, as its guest-physical address (8 bytes, little
	// endian) and its bytes, then RAM's size (8 bytes): RAM's contents
	// alone, at a cost that grows with what the guest used rather than
	// with RAM's size (the tapes of format version 9 on).
	HashPages Hashing = iota
	// HashBytes takes in every byte of RAM in order (tapes before format
	// version 9): 164 ms of SHA-256 for 256 MiB on the test machines,
	// whatever the guest used.
	HashBytes
)

const pageSize = 4096

var zeros [64 << 10]byte

// Hash writes RAM into h as how says.
func (r *RAM) Hash(h io.Writer, how Hashing) {
	ram := r.Populated()
	if how == HashBytes {
		h.Write(ram)
		for left := uint64(len(r.b) - len(ram)); left > 0; {
			n := min(left, uint64(len(zeros)))
			h.Write(zeros[:n])
			left -= n
		}
		return
	}
	var addr [8]byte
	for off := 0; off < len(ram); off += pageSize {
		page := ram[off : off+pageSize]
		if bytes.Equal(page, zeros[:pageSize]) {
			continue
		}
		binary.LittleEndian.PutUint64(addr[:], uint64(off))
		h.Write(addr[:])
		h.Write(page)
	}
	binary.LittleEndian.PutUint64(addr[:], uint64(len(r.b)))
	h.Write(addr[:])
}
