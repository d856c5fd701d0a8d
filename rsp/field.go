package rsp

import (
	"errors"
	"fmt"
	"strings"
)

// maxHexDigits is the most digits a number may have: 64 bits.
const maxHexDigits = 16

// parseHex parses a non-empty unsigned hex number of at most 16 digits.
func parseHex(s string) (uint64, error) {
	if s == "" {
		return 0, errors.New("empty number")
	}
	if len(s) > maxHexDigits {
		return 0, fmt.Errorf("%d hex digits, over %d", len(s), maxHexDigits)
	}
	var n uint64
	for i := range len(s) {
		d, ok := hexDigit(s[i])
		if !ok {
			return 0, fmt.Errorf("%q is not a hex digit", s[i])
		}
		n = n<<4 | uint64(d)
	}
	return n, nil
}

func hexDigit(c byte) (uint8, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// parseBounded parses a hex number of at most limit.
func parseBounded(s string, limit uint64) (uint64, error) {
	n, err := parseHex(s)
	if err != nil {
		return 0, err
	}
	if n > limit {
		return 0, fmt.Errorf("%#x is over %#x", n, limit)
	}
	return n, nil
}

// parsePair parses "a,b", two hex numbers, naming the one that is wrong.
func parsePair(s, first, second string) (a, b uint64, err error) {
	fa, fb, ok := strings.Cut(s, ",")
	if !ok {
		return 0, 0, errors.New("missing comma")
	}
	if a, err = parseHex(fa); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", first, err)
	}
	if b, err = parseHex(fb); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", second, err)
	}
	return a, b, nil
}

// checkRange refuses a memory range that wraps past 2^64.
func checkRange(addr, length uint64) error {
	if length > 0 && addr+length-1 < addr {
		return fmt.Errorf("range %#x+%#x wraps past 2^64", addr, length)
	}
	return nil
}

// parseHexBytes decodes hex-encoded bytes; the result is nil when s is
// empty. Its length is half the packet's at most.
func parseHexBytes(s string) ([]byte, error) {
	if len(s)%2 != 0 {
		return nil, fmt.Errorf("odd number of hex digits (%d)", len(s))
	}
	if s == "" {
		return nil, nil
	}
	b := make([]byte, len(s)/2)
	for i := range b {
		hi, ok1 := hexDigit(s[2*i])
		lo, ok2 := hexDigit(s[2*i+1])
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%q is not a hex byte", s[2*i:2*i+2])
		}
		b[i] = hi<<4 | lo
	}
	return b, nil
}

// parseSignal parses a signal number: one or two hex digits.
func parseSignal(s string) (Signal, error) {
	if len(s) > 2 {
		return 0, fmt.Errorf("signal %q: over two hex digits", s)
	}
	n, err := parseHex(s)
	if err != nil {
		return 0, fmt.Errorf("signal: %w", err)
	}
	return Signal(n), nil
}

// parseOptionalAddr parses the address some resume packets may carry.
func parseOptionalAddr(s string) (*uint64, error) {
	if s == "" {
		return nil, nil
	}
	a, err := parseHex(s)
	if err != nil {
		return nil, fmt.Errorf("address: %w", err)
	}
	return &a, nil
}
