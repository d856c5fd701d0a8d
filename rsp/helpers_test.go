package rsp

import (
	"bytes"
	"fmt"
)

// packet frames raw as gdb sends it, escaping nothing: the test writes
// escapes and runs itself. It does not use appendPacket, so as to check it.
func packet(raw string) string {
	var sum uint8
	for i := range len(raw) {
		sum += raw[i]
	}
	return fmt.Sprintf("$%s#%02x", raw, sum)
}

// peer is the gdb side of a Conn under test: what gdb sent, and what the
// Conn wrote back.
type peer struct {
	in  *bytes.Reader
	out bytes.Buffer
}

func (p *peer) Read(b []byte) (int, error)  { return p.in.Read(b) }
func (p *peer) Write(b []byte) (int, error) { return p.out.Write(b) }

// newTestConn returns a Conn reading input, and what it writes.
func newTestConn(input string) (*Conn, *bytes.Buffer) {
	p := &peer{in: bytes.NewReader([]byte(input))}
	return NewConn(p), &p.out
}

func addr(a uint64) *uint64 { return &a }
