package vmm

import (
	"bytes"
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
	w    io.Writer
	line []byte
	tail []string
}

func newConsoleTail(w io.Writer) *consoleTail { return &consoleTail{w: w} }

func (c *consoleTail) Write(p []byte) (int, error) {
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
