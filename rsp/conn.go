package rsp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// MaxPacket is the longest packet a Conn reads, as sent between '$' and
// '#' and once decoded; Supported advertises it to gdb as PacketSize.
const MaxPacket = 64 << 10

// maxTries bounds retransmissions: a packet is sent at most this many
// times, and this many bad packets in a row end a Read.
const maxTries = 3

// readBuffer is how far past a packet a Conn may read ahead.
const readBuffer = 4 << 10

var (
	// ErrInterrupt is Read's answer to the byte 0x03 outside a packet: gdb
	// asks the stub to stop the target (the user pressed Ctrl-C).
	ErrInterrupt = errors.New("rsp: interrupt (0x03) from gdb")
	// ErrTooLong says a packet is longer than MaxPacket; the Conn is then
	// unusable, as the rest of the packet was not read.
	ErrTooLong = fmt.Errorf("rsp: packet longer than MaxPacket (%d bytes)", MaxPacket)
)

// Conn is one gdb client's connection.
type Conn struct {
	r     *bufio.Reader
	w     io.Writer
	noAck bool
	// interrupted records a 0x03 seen while Write waited for an ack, for
	// the next Read to return.
	interrupted bool
	// err is the error that lost Read its place in the stream: every
	// later Read returns it.
	err error
	raw []byte // the packet being read, as sent; reused
	out []byte // the packet being written; reused
}

// NewConn returns a Conn speaking over rw, in ack mode.
func NewConn(rw io.ReadWriter) *Conn {
	return &Conn{r: bufio.NewReaderSize(rw, readBuffer), w: rw}
}

// SetNoAck stops acks both ways. Call it once the OK answering
// QStartNoAckMode was written (and so acknowledged).
func (c *Conn) SetNoAck() { c.noAck = true }

// Read returns the next packet's payload, unescaped and with runs
// expanded, in a new slice. It answers an intact packet with '+' and a
// bad one (wrong checksum, bad escape or run) with '-', then reads the
// retransmission; in no-ack mode it sends neither, and a bad packet is an
// error. A 0x03 byte outside a packet returns ErrInterrupt. Read returns
// io.EOF if the peer closes between packets. Any error other than
// ErrInterrupt is final: every later Read returns it again.
func (c *Conn) Read() ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	if c.interrupted {
		c.interrupted = false
		return nil, ErrInterrupt
	}
	for bad := 0; ; {
		b, err := c.r.ReadByte()
		if errors.Is(err, io.EOF) {
			return nil, c.fail(io.EOF)
		}
		if err != nil {
			return nil, c.fail(fmt.Errorf("rsp: read: %w", err))
		}
		switch b {
		case interrupt:
			return nil, ErrInterrupt
		case packetStart:
		default:
			continue // an ack, or noise between packets
		}
		raw, sum, err := c.readPacket()
		if err != nil {
			return nil, c.fail(err)
		}
		payload, err := c.check(raw, sum)
		if err == nil {
			if !c.noAck {
				if err := c.send(ackByte); err != nil {
					return nil, c.fail(err)
				}
			}
			return payload, nil
		}
		bad++
		if c.noAck {
			return nil, c.fail(err)
		}
		if bad == maxTries {
			return nil, c.fail(fmt.Errorf("%w (%d bad packets in a row)", err, bad))
		}
		if err := c.send(nackByte); err != nil {
			return nil, c.fail(err)
		}
	}
}

// readPacket reads the rest of a packet whose '$' was read: its bytes as
// sent (in c.raw, valid until the next call) and its two checksum bytes.
// A '$' inside a packet starts it over: the first was cut short by noise,
// and the sender will retransmit it for want of an ack.
func (c *Conn) readPacket() ([]byte, [2]byte, error) {
	c.raw = c.raw[:0]
	for {
		b, err := c.r.ReadByte()
		if err != nil {
			return nil, [2]byte{}, fmt.Errorf("rsp: packet cut short after %d bytes: %w", len(c.raw), eofUnexpected(err))
		}
		switch b {
		case packetEnd:
			var sum [2]byte
			for i := range sum {
				if sum[i], err = c.r.ReadByte(); err != nil {
					return nil, sum, fmt.Errorf("rsp: packet %s: checksum cut short: %w", quote(c.raw), eofUnexpected(err))
				}
			}
			return c.raw, sum, nil
		case packetStart:
			c.raw = c.raw[:0]
		default:
			if len(c.raw) == MaxPacket {
				return nil, [2]byte{}, fmt.Errorf("%w, starting %s", ErrTooLong, quote(c.raw[:quoteLimit]))
			}
			c.raw = append(c.raw, b)
		}
	}
}

// check verifies a packet's checksum (in ack mode) and decodes it.
func (c *Conn) check(raw []byte, sum [2]byte) ([]byte, error) {
	if !c.noAck {
		want := checksum(raw)
		got, ok := parseChecksum(sum)
		if !ok {
			return nil, fmt.Errorf("rsp: packet %s: checksum %q is not two hex digits", quote(raw), sum[:])
		}
		if got != want {
			return nil, fmt.Errorf("rsp: packet %s: checksum %02x, want %02x", quote(raw), got, want)
		}
	}
	payload, err := decode(raw)
	if err != nil {
		return nil, fmt.Errorf("rsp: packet %s: %w", quote(raw), err)
	}
	return payload, nil
}

func parseChecksum(sum [2]byte) (uint8, bool) {
	hi, ok1 := hexDigit(sum[0])
	lo, ok2 := hexDigit(sum[1])
	return hi<<4 | lo, ok1 && ok2
}

// Write sends payload as a packet, escaping what must be. In ack mode it
// then waits for gdb's '+', sending the packet again on '-', at most
// maxTries times in all.
func (c *Conn) Write(payload []byte) error {
	c.out = appendPacket(c.out[:0], payload)
	for try := 1; ; try++ {
		if _, err := c.w.Write(c.out); err != nil {
			return fmt.Errorf("rsp: write packet %s: %w", quote(payload), err)
		}
		if c.noAck {
			return nil
		}
		ok, err := c.awaitAck()
		if err != nil {
			return fmt.Errorf("rsp: packet %s: %w", quote(payload), err)
		}
		if ok {
			return nil
		}
		if try == maxTries {
			return fmt.Errorf("rsp: packet %s: refused %d times", quote(payload), try)
		}
	}
}

// awaitAck reads up to gdb's ack: true for '+', false for '-'. It keeps a
// 0x03 for the next Read and skips other bytes, as Read does.
func (c *Conn) awaitAck() (bool, error) {
	for {
		b, err := c.r.ReadByte()
		if err != nil {
			return false, c.fail(fmt.Errorf("rsp: waiting for an ack: %w", eofUnexpected(err)))
		}
		switch b {
		case ackByte:
			return true, nil
		case nackByte:
			return false, nil
		case interrupt:
			c.interrupted = true
		}
	}
}

func (c *Conn) send(b byte) error {
	if _, err := c.w.Write([]byte{b}); err != nil {
		return fmt.Errorf("rsp: write %q: %w", b, err)
	}
	return nil
}

// fail makes err final for Read.
func (c *Conn) fail(err error) error {
	c.err = err
	return err
}

// eofUnexpected turns io.EOF into io.ErrUnexpectedEOF: the stream ended
// where more was due.
func eofUnexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Interrupt sends the byte 0x03 outside a packet, as gdb does to stop a
// running target: a client's side of the protocol, for a program that
// drives a stub as gdb would.
func (c *Conn) Interrupt() error { return c.send(0x03) }
