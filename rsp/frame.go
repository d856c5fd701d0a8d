package rsp

import (
	"errors"
	"fmt"
)

// Framing bytes (doc.go).
const (
	packetStart = '$'
	packetEnd   = '#'
	escapeByte  = '}'
	runByte     = '*'
	ackByte     = '+'
	nackByte    = '-'
	interrupt   = 0x03
	escapeXor   = 0x20
	runBias     = 29 // a run's count byte n means n-29 more copies
)

// checksum is the modulo-256 sum of the bytes between '$' and '#'.
func checksum(b []byte) uint8 {
	var s uint8
	for _, c := range b {
		s += c
	}
	return s
}

func mustEscape(c byte) bool {
	return c == packetStart || c == packetEnd || c == escapeByte || c == runByte
}

// appendPacket appends payload framed as a packet: escaped, never run-
// length encoded (on a pipe or TCP the bytes saved are not worth a second
// encoding to get right).
func appendPacket(dst, payload []byte) []byte {
	dst = append(dst, packetStart)
	start := len(dst)
	for _, c := range payload {
		if mustEscape(c) {
			dst = append(dst, escapeByte, c^escapeXor)
		} else {
			dst = append(dst, c)
		}
	}
	sum := checksum(dst[start:])
	return append(dst, packetEnd, hexDigits[sum>>4], hexDigits[sum&0xf])
}

const hexDigits = "0123456789abcdef"

// decode turns a packet's bytes as sent into its payload: it expands runs,
// then undoes escapes, the order gdb's own reader uses (a run repeats the
// byte before it as sent, which may be half of an escape). The result is
// a new slice of at most MaxPacket bytes.
func decode(raw []byte) ([]byte, error) {
	size := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != runByte {
			size++
			continue
		}
		if size == 0 {
			return nil, errors.New("run-length marker with nothing to repeat")
		}
		i++
		if i == len(raw) {
			return nil, errors.New("run-length marker without a count")
		}
		n, err := runCount(raw[i])
		if err != nil {
			return nil, err
		}
		size += n
	}
	if size > MaxPacket {
		return nil, fmt.Errorf("expands to %d bytes, over MaxPacket (%d)", size, MaxPacket)
	}
	out := make([]byte, 0, size)
	for i := 0; i < len(raw); i++ {
		if raw[i] != runByte {
			out = append(out, raw[i])
			continue
		}
		i++
		n, _ := runCount(raw[i]) // checked above
		prev := out[len(out)-1]
		for range n {
			out = append(out, prev)
		}
	}
	return unescape(out)
}

// runCount is the number of extra copies a run's count byte stands for.
func runCount(c byte) (int, error) {
	if c < ' ' || c > '~' {
		return 0, fmt.Errorf("run-length count byte 0x%02x is not printable", c)
	}
	return int(c) - runBias, nil
}

// unescape undoes '}' escapes in place.
func unescape(b []byte) ([]byte, error) {
	n := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == escapeByte {
			i++
			if i == len(b) {
				return nil, errors.New("escape '}' at the end")
			}
			c = b[i] ^ escapeXor
		}
		b[n] = c
		n++
	}
	return b[:n], nil
}

// quoteLimit bounds how much of a packet an error message shows.
const quoteLimit = 40

// quote names a packet in an error message, cut short if long.
func quote[T string | []byte](p T) string {
	if len(p) <= quoteLimit {
		return fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf("%q... (%d bytes)", p[:quoteLimit], len(p))
}
