package rsp

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReadAcksAndSkipsNoise(t *testing.T) {
	c, out := newTestConn("+junk\n" + packet("qC") + "+" + packet("g"))
	got, err := c.Read()
	require.NoError(t, err)
	require.Equal(t, "qC", string(got))
	got, err = c.Read()
	require.NoError(t, err)
	require.Equal(t, "g", string(got))
	_, err = c.Read()
	require.Equal(t, io.EOF, err)
	require.Equal(t, "++", out.String())
}

func TestReadChecksumAcceptsUpperCase(t *testing.T) {
	c, out := newTestConn("$m0,1#FA")
	got, err := c.Read()
	require.NoError(t, err)
	require.Equal(t, "m0,1", string(got))
	require.Equal(t, "+", out.String())
}

func TestReadNacksBadChecksumThenTakesRetransmission(t *testing.T) {
	c, out := newTestConn("$m0,1#00" + "$m0,1#zz" + packet("m0,1"))
	got, err := c.Read()
	require.NoError(t, err)
	require.Equal(t, "m0,1", string(got))
	require.Equal(t, "--+", out.String())
}

func TestReadGivesUpAfterBadPacketsInARow(t *testing.T) {
	c, out := newTestConn("$m0,1#00$m0,1#00$m0,1#00" + packet("m0,1"))
	_, err := c.Read()
	require.ErrorContains(t, err, `rsp: packet "m0,1": checksum 00, want fa (3 bad packets in a row)`)
	require.Equal(t, "--", out.String())
	_, again := c.Read()
	require.Equal(t, err, again, "a lost stream stays lost")
}

func TestReadNacksUndecodablePacket(t *testing.T) {
	c, out := newTestConn(packet("ab}") + packet("ab}]"))
	got, err := c.Read()
	require.NoError(t, err)
	require.Equal(t, "ab}", string(got))
	require.Equal(t, "-+", out.String())
}

func TestReadEscapesAndRuns(t *testing.T) {
	c, _ := newTestConn(packet("X0,4:}\x03}\x04}]}\x0a") + packet("0* ") + packet("X0,1:\x03"))
	for _, want := range []string{"X0,4:#$}*", "0000", "X0,1:\x03"} {
		got, err := c.Read()
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	}
}

func TestReadInterrupt(t *testing.T) {
	c, out := newTestConn("\x03" + packet("?") + "+\x03")
	_, err := c.Read()
	require.ErrorIs(t, err, ErrInterrupt)
	got, err := c.Read()
	require.NoError(t, err)
	require.Equal(t, "?", string(got))
	_, err = c.Read()
	require.ErrorIs(t, err, ErrInterrupt)
	_, err = c.Read()
	require.Equal(t, io.EOF, err, "an interrupt is not final")
	require.Equal(t, "+", out.String())
}

func TestReadRestartsAtDollar(t *testing.T) {
	c, out := newTestConn("$m0,1$" + packet("g")[1:])
	got, err := c.Read()
	require.NoError(t, err)
	require.Equal(t, "g", string(got))
	require.Equal(t, "+", out.String())
}

func TestNoAckMode(t *testing.T) {
	c, out := newTestConn("+" + packet("QStartNoAckMode") + "+" + "$qC#00" + packet("ab}"))
	got, err := c.Read()
	require.NoError(t, err)
	require.Equal(t, "QStartNoAckMode", string(got))
	require.NoError(t, c.Write(OK()))
	c.SetNoAck()
	require.Equal(t, "+$OK#9a", out.String())
	out.Reset()

	got, err = c.Read()
	require.NoError(t, err, "no-ack mode ignores checksums")
	require.Equal(t, "qC", string(got))
	require.NoError(t, c.Write([]byte("QCp1.1")), "and expects no ack")
	require.Equal(t, "$QCp1.1#"+hexSum("QCp1.1"), out.String())

	_, err = c.Read()
	require.ErrorContains(t, err, "escape '}' at the end", "a bad packet cannot be nacked")
	require.Equal(t, "$QCp1.1#"+hexSum("QCp1.1"), out.String())
}

func TestReadTooLong(t *testing.T) {
	// A packet of exactly MaxPacket bytes is fine.
	c, _ := newTestConn(packet(strings.Repeat("a", MaxPacket)))
	got, err := c.Read()
	require.NoError(t, err)
	require.Len(t, got, MaxPacket)

	// One that never ends is refused, and not read far past the bound.
	r := &endless{}
	c = NewConn(struct {
		io.Reader
		io.Writer
	}{r, io.Discard})
	_, err = c.Read()
	require.ErrorIs(t, err, ErrTooLong)
	require.LessOrEqual(t, r.n, 1+MaxPacket+1+readBuffer)
	_, again := c.Read()
	require.ErrorIs(t, again, ErrTooLong)
}

// endless is a packet that never ends, counting the bytes read of it.
type endless struct{ n int }

func (e *endless) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = 'a'
	}
	if e.n == 0 {
		b[0] = '$'
	}
	e.n += len(b)
	return len(b), nil
}

func TestReadPeerClosesMidPacket(t *testing.T) {
	for _, sent := range []string{"$abc", "$abc#", "$abc#1"} {
		server, client := pipe(t)
		go func() {
			_, _ = client.Write([]byte(sent))
			_ = client.Close()
		}()
		done := make(chan error, 1)
		go func() {
			_, err := NewConn(server).Read()
			done <- err
		}()
		err := <-done
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "sent %q", sent)
		require.ErrorContains(t, err, "cut short", "sent %q", sent)
	}
}

func TestWriteEscapesAndWaitsForAck(t *testing.T) {
	c, out := newTestConn("+")
	require.NoError(t, c.Write([]byte("a$b#c}d*e")))
	raw := "a}\x04b}\x03c}]d}\x0ae"
	require.Equal(t, "$"+raw+"#"+hexSum(raw), out.String())
}

func TestWriteResendsOnNack(t *testing.T) {
	c, out := newTestConn("-x+")
	require.NoError(t, c.Write([]byte("OK")))
	require.Equal(t, "$OK#9a$OK#9a", out.String())

	c, out = newTestConn("---+")
	require.ErrorContains(t, c.Write([]byte("OK")), `rsp: packet "OK": refused 3 times`)
	require.Equal(t, strings.Repeat("$OK#9a", 3), out.String())
}

func TestWriteKeepsInterruptForRead(t *testing.T) {
	c, _ := newTestConn("\x03+")
	require.NoError(t, c.Write([]byte("S05")))
	_, err := c.Read()
	require.ErrorIs(t, err, ErrInterrupt)
	_, err = c.Read()
	require.Equal(t, io.EOF, err)
}

func TestWriteWithoutAck(t *testing.T) {
	c, _ := newTestConn("")
	err := c.Write([]byte("OK"))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.ErrorContains(t, err, "waiting for an ack")
}

func TestWriteError(t *testing.T) {
	server, client := pipe(t)
	_ = client.Close()
	err := NewConn(server).Write([]byte("OK"))
	require.ErrorIs(t, err, io.ErrClosedPipe)
}

// TestRoundTrip runs two Conns against each other over a pipe, as gdb
// and a stub, with every byte value in a payload, in ack mode and then
// in no-ack mode.
func TestRoundTrip(t *testing.T) {
	a, b := pipe(t)
	gdb, stub := NewConn(a), NewConn(b)
	var all []byte
	for i := range 256 {
		all = append(all, byte(i))
	}
	payloads := [][]byte{[]byte("qSupported:multiprocess+"), append([]byte("X0,100:"), all...), {}, []byte("}}}$$$###***")}

	exchange := func() {
		errs := make(chan error, 1)
		go func() {
			for _, p := range payloads {
				if err := gdb.Write(p); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
		for _, want := range payloads {
			got, err := stub.Read()
			require.NoError(t, err)
			require.Equal(t, want, got)
		}
		require.NoError(t, <-errs)
	}
	exchange()
	gdb.SetNoAck()
	stub.SetNoAck()
	exchange()
}

func TestReadIOError(t *testing.T) {
	boom := errors.New("boom")
	c := NewConn(struct {
		io.Reader
		io.Writer
	}{iotestErr{boom}, io.Discard})
	_, err := c.Read()
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "rsp: read: boom")
}

type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

// TestNoAckReadWhileWriting has a stub read, to see 0x03, while it writes
// a reply: in no-ack mode that is allowed (run with -race).
func TestNoAckReadWhileWriting(t *testing.T) {
	a, b := pipe(t)
	gdb, stub := NewConn(a), NewConn(b)
	gdb.SetNoAck()
	stub.SetNoAck()
	reads := make(chan error, 1)
	go func() {
		_, err := stub.Read()
		reads <- err
	}()
	go func() { _ = stub.Write(StopSignal(SigTrap)) }()
	got, err := gdb.Read()
	require.NoError(t, err)
	require.Equal(t, "S05", string(got))
	_, err = a.Write([]byte{interrupt})
	require.NoError(t, err)
	require.ErrorIs(t, <-reads, ErrInterrupt)
}

// pipe is net.Pipe with a deadline, so that a broken Conn fails a test
// rather than hangs it.
func pipe(t *testing.T) (net.Conn, net.Conn) {
	a, b := net.Pipe()
	deadline := time.Now().Add(10 * time.Second)
	require.NoError(t, a.SetDeadline(deadline))
	require.NoError(t, b.SetDeadline(deadline))
	t.Cleanup(func() {
		_ = a.Close()
		_ = b.Close()
	})
	return a, b
}

func TestReadTooLongNamesTheBound(t *testing.T) {
	c, _ := newTestConn("$" + strings.Repeat("a", MaxPacket+1) + "#00")
	_, err := c.Read()
	require.EqualError(t, err, `rsp: packet longer than MaxPacket (65536 bytes), starting "`+strings.Repeat("a", quoteLimit)+`"`)
}
