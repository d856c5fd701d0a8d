package tape

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
)

// Sizes and limits of the file layout drawn in doc.go.
const (
	prefixSize = 16 // magic, version, crc
	frameSize  = 20 // tag, length, count, body crc, frame crc

	maxHeaderBytes  = 64 << 20  // header JSON
	maxImageBytes   = 256 << 20 // embedded guest image
	maxPayloadBytes = 16 << 20  // one chunk's events
	MaxPackedBytes  = 1 << 30   // a Linux program's packed files, together (exported: what pack reads)
)

// magic opens every tape; the NUL keeps it from reading as text.
var magic = [8]byte{'R', 'E', 'P', 'R', 'I', 'S', 'E', 0}

// Frame tags: what the body of a frame holds.
var (
	tagHeader = [4]byte{'H', 'E', 'A', 'D'}
	tagImage  = [4]byte{'I', 'M', 'A', 'G'}
	tagChunk  = [4]byte{'C', 'H', 'N', 'K'}
	tagHost   = [4]byte{'H', 'O', 'S', 'T'} // since version 3
	tagFile   = [4]byte{'F', 'I', 'L', 'E'} // since version 4: a packed file of a Linux program
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// appendPrefix appends the 16-byte file prefix.
func appendPrefix(b []byte, version uint32) []byte {
	start := len(b)
	b = append(b, magic[:]...)
	b = binary.LittleEndian.AppendUint32(b, version)
	return binary.LittleEndian.AppendUint32(b, crc(b[start:]))
}

// parsePrefix checks a 16-byte prefix and returns its version. The caller
// has already checked the magic.
func parsePrefix(p []byte) (version uint32, ok bool) {
	version = binary.LittleEndian.Uint32(p[8:])
	return version, binary.LittleEndian.Uint32(p[12:]) == crc(p[:12])
}

// frame is a parsed frame header.
type frame struct {
	tag     [4]byte
	length  uint32 // body bytes
	count   uint32 // events in a chunk, 0 otherwise
	bodyCRC uint32
}

// putFrame fills the frameSize bytes of hdr for a body.
func putFrame(hdr []byte, tag [4]byte, count uint32, body []byte) {
	_ = hdr[frameSize-1]
	copy(hdr, tag[:])
	binary.LittleEndian.PutUint32(hdr[4:], uint32(len(body)))
	binary.LittleEndian.PutUint32(hdr[8:], count)
	binary.LittleEndian.PutUint32(hdr[12:], crc(body))
	binary.LittleEndian.PutUint32(hdr[16:], crc(hdr[:16]))
}

// appendFrame appends a whole frame: header and body.
func appendFrame(b []byte, tag [4]byte, count uint32, body []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, frameSize)...)
	putFrame(b[start:], tag, count, body)
	return append(b, body...)
}

// parseFrame decodes a frame header, checking its own crc and that its
// tag is want or, if set, also. It returns a reason when the header is
// damaged.
func parseFrame(hdr []byte, want, also [4]byte) (frame, string) {
	var f frame
	copy(f.tag[:], hdr)
	ok := f.tag == want || (also != [4]byte{} && f.tag == also)
	if binary.LittleEndian.Uint32(hdr[16:]) != crc(hdr[:16]) {
		if !ok {
			return f, "bad " + tagName(want) + " magic " + quoteTag(f.tag)
		}
		return f, tagName(f.tag) + " frame crc mismatch"
	}
	if !ok {
		return f, "found a " + quoteTag(f.tag) + " frame where a " + tagName(want) + " belongs"
	}
	f.length = binary.LittleEndian.Uint32(hdr[4:])
	f.count = binary.LittleEndian.Uint32(hdr[8:])
	f.bodyCRC = binary.LittleEndian.Uint32(hdr[12:])
	return f, ""
}

func tagName(t [4]byte) string {
	switch t {
	case tagHeader:
		return "header"
	case tagImage:
		return "image"
	case tagHost:
		return "host"
	case tagFile:
		return "packed file"
	default:
		return "chunk"
	}
}

func quoteTag(t [4]byte) string { return strconv.Quote(string(t[:])) }
