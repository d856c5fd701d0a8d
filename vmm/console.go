package vmm

import (
	"bytes"
	"crypto/sha256"
	"hash"
	"io"
)

// consoleTailLines is how many console lines a fault report quotes.
const consoleTailLines = 12

// maxConsoleLine bounds a line the guest never terminates, so a guest
// cannot make the VMM buffer without limit.
const maxConsoleLine = 4096

// consoleTail forwards guest console output to w a line at a time (one
// write per line rather than per byte) and remembers the last lines for
// fault reports.
type consoleTail struct {
	w     io.Writer
	line  []byte
	tail  []string
	sum   hash.Hash // of everything written: recordings keep it, replays compare
	total uint64
}

func newConsoleTail(w io.Writer) *consoleTail { return &consoleTail{w: w, sum: sha256.New()} }

// Sum returns the SHA-256 and length of all console output so far.
func (c *consoleTail) Sum() (sum [32]byte, n uint64) {
	copy(sum[:], c.sum.Sum(nil))
	return sum, c.total
}

func (c *consoleTail) Write(p []byte) (int, error) {
	c.sum.Write(p)
	c.total += uint64(len(p))
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.line = append(c.line, p...)
			if len(c.line) >= maxConsoleLine {
				c.emit()
			}
			break
		}
		c.line = append(c.line, p[:i+1]...)
		p = p[i+1:]
		c.emit()
	}
	return n, nil
}

func (c *consoleTail) emit() {
	if c.w != nil {
		_, _ = c.w.Write(c.line)
	}
	c.tail = append(c.tail, string(bytes.TrimRight(c.line, "\r\n")))
	if len(c.tail) > consoleTailLines {
		c.tail = c.tail[len(c.tail)-consoleTailLines:]
	}
	c.line = c.line[:0]
}

// Flush writes a pending partial line.
func (c *consoleTail) Flush() {
	if len(c.line) > 0 {
		c.emit()
	}
}

// Tail returns the last console lines.
func (c *consoleTail) Tail() []string { return append([]string(nil), c.tail...) }
