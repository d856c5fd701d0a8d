package vfs

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/vmm/door"
)

// ops lists the outbox's messages as op and connection.
func ops(fs *FileSystem) []string {
	var out []string
	for _, m := range fs.TakeOutbox() {
		out = append(out, m.String())
	}
	return out
}

// A connection through the door: refused where nothing listens; else
// accepted from the backlog with the client's address, its bytes
// received, its windows kept each way (the receiver gives room back a
// quarter window at a time; the sender waits for acknowledgements past a
// window), and its end said to the host: a close with bytes unread is a
// reset. Messages the host could not have sent are errors.
func TestDoorConnection(t *testing.T) {
	fs, b := tree(t)
	peer := netip.MustParseAddrPort("10.0.2.2:40000")
	require.NoError(t, fs.Arrive(door.Msg{Op: door.Open, Conn: 1, Port: 80, Peer: peer}, 100))
	require.Equal(t, []string{"connection 1: reset"}, ops(fs), "nothing listens on port 80")

	lf, err := NewSocket(b, unix.AF_INET6, unix.SOCK_STREAM, unix.O_NONBLOCK, [3]uint32{}, 101)
	require.NoError(t, err)
	l := SocketOf(lf)
	require.NoError(t, fs.BindInet(l, netip.MustParseAddrPort("[::]:80"), true))
	require.NoError(t, fs.ListenInet(l, 8))
	require.NoError(t, fs.Arrive(door.Msg{Op: door.Open, Conn: 2, Port: 80, Peer: peer}, 102))
	require.ErrorContains(t, fs.Arrive(door.Msg{Op: door.Open, Conn: 2, Port: 80, Peer: peer}, 103), "open already")
	cf, err := l.Accept(0, true)
	require.NoError(t, err)
	c := SocketOf(cf)
	require.Equal(t, "[::ffff:10.0.2.2]:40000", c.Remote().String())
	require.Equal(t, "[::ffff:127.0.0.1]:80", c.Local().String())

	// Host to guest: the window is the receive buffer.
	chunk := make([]byte, door.MaxData)
	delivered := 0
	for delivered+len(chunk) <= door.Room {
		require.NoError(t, fs.Deliver(door.Msg{Op: door.Data, Conn: 2, Data: chunk}))
		delivered += len(chunk)
	}
	require.ErrorContains(t, fs.Deliver(door.Msg{Op: door.Data, Conn: 2, Data: chunk}), "past the connection's window")
	buf := make([]byte, windowStep-1)
	_, err = c.Read(cf, buf, 0)
	require.NoError(t, err)
	require.Empty(t, ops(fs), "less than a step taken: no room given yet")
	_, err = c.Read(cf, buf[:1], 0)
	require.NoError(t, err)
	require.Equal(t, []string{"connection 2: window 53248"}, ops(fs))

	// Guest to host: a window of unacknowledged bytes, in messages of
	// at most MaxData, each at its offset.
	n, err := c.Write(cf, make([]byte, door.Room+5), 0)
	require.NoError(t, err)
	require.Equal(t, door.Room, n)
	sent := fs.TakeOutbox()
	require.Len(t, sent, 4)
	require.Equal(t, uint64(3*door.MaxData), sent[3].Offset)
	require.Zero(t, c.Readiness()&EventOut)
	_, err = c.Write(cf, []byte("x"), 0)
	require.ErrorIs(t, err, ErrWouldBlock)
	require.ErrorContains(t, fs.Deliver(door.Msg{Op: door.Ack, Conn: 2, N: door.Room + 1}), "unacknowledged")
	require.NoError(t, fs.Deliver(door.Msg{Op: door.Ack, Conn: 2, N: 100}))
	require.NotZero(t, c.Readiness()&EventOut)
	n, err = c.Write(cf, []byte("more"), 0)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	require.Equal(t, []string{"connection 2: data of 4 bytes at offset 212992"}, ops(fs))

	// The client's end of file, then a close with bytes unread.
	require.NoError(t, fs.Deliver(door.Msg{Op: door.Fin, Conn: 2}))
	require.NotZero(t, c.Readiness()&EventIn)
	require.NoError(t, c.Shutdown(unix.SHUT_WR))
	require.Equal(t, []string{"connection 2: fin"}, ops(fs))
	c.Release()
	require.Equal(t, []string{"connection 2: reset"}, ops(fs), "closed with bytes unread")
	require.NoError(t, fs.Deliver(door.Msg{Op: door.Data, Conn: 2, Data: []byte("late")}), "for a closed connection: dropped")
	require.Empty(t, ops(fs))

	// A client's reset is the next receive's ECONNRESET; closing then
	// says nothing more.
	require.NoError(t, fs.Arrive(door.Msg{Op: door.Open, Conn: 3, Port: 80, Peer: peer}, 104))
	cf, err = l.Accept(0, true)
	require.NoError(t, err)
	c = SocketOf(cf)
	require.NoError(t, fs.Deliver(door.Msg{Op: door.Reset, Conn: 3}))
	_, err = c.Read(cf, buf, 0)
	require.ErrorIs(t, err, unix.ECONNRESET)
	_, err = c.Write(cf, []byte("x"), 0)
	require.ErrorIs(t, err, ErrNoReaders)
	c.Release()
	require.Empty(t, ops(fs))
	require.NoError(t, fs.Deliver(door.Msg{Op: door.Data, Conn: 9, Data: []byte("x")}), "a connection never opened: dropped")
	require.NoError(t, fs.Arrive(door.Msg{Op: door.Open, Conn: 4, Port: 80, Peer: peer}, 105))
	require.ErrorContains(t, fs.Deliver(door.Msg{Op: door.Window, Conn: 4, N: 1}), "not a message from the host")
}

// A connection the program makes to a host address (--egress): a
// Connect goes out from an ephemeral port of the machine's address, a
// nonblocking connect is EINPROGRESS then EALREADY, it is writable once
// the host says Connected; refused, its error is SO_ERROR's, once. With
// no door, a host address is unreachable.
func TestDoorEgress(t *testing.T) {
	fs, b := tree(t)
	sf, err := NewSocket(b, unix.AF_INET, unix.SOCK_STREAM, unix.O_NONBLOCK, [3]uint32{}, 7)
	require.NoError(t, err)
	s := SocketOf(sf)
	to := netip.MustParseAddrPort("10.0.2.2:5432")
	_, err = fs.ConnectInet(s, to, true, 8)
	require.ErrorIs(t, err, unix.ENETUNREACH, "no door")

	fs.SetDoor(true)
	_, err = fs.ConnectInet(s, to, true, 8)
	require.ErrorIs(t, err, unix.EINPROGRESS)
	out := fs.TakeOutbox()
	require.Len(t, out, 1)
	require.Equal(t, door.Connect, out[0].Op)
	require.Equal(t, to, out[0].Peer)
	require.Equal(t, uint32(door.EgressBit|7), out[0].Conn)
	require.Equal(t, "10.0.2.15", s.Local().Addr().String())
	require.Equal(t, s.Local().Port(), out[0].Port)
	_, err = fs.ConnectInet(s, to, true, 8)
	require.ErrorIs(t, err, unix.EALREADY)
	require.Zero(t, s.Readiness()&EventOut, "not writable while connecting")
	_, err = s.Write(sf, []byte("x"), 0)
	require.ErrorIs(t, err, unix.EAGAIN)
	require.ErrorContains(t, fs.Deliver(door.Msg{Op: door.Data, Conn: out[0].Conn, Data: []byte("x")}), "not made yet")
	require.NoError(t, fs.Deliver(door.Msg{Op: door.Connected, Conn: out[0].Conn}))
	require.NotZero(t, s.Readiness()&EventOut)
	_, err = fs.ConnectInet(s, to, true, 8)
	require.ErrorIs(t, err, unix.EISCONN)

	rf, err := NewSocket(b, unix.AF_INET6, unix.SOCK_STREAM, unix.O_NONBLOCK, [3]uint32{}, 9)
	require.NoError(t, err)
	r := SocketOf(rf)
	_, err = fs.ConnectInet(r, netip.MustParseAddrPort("[2001:db8::1]:80"), true, 10)
	require.ErrorIs(t, err, unix.EINPROGRESS)
	id := fs.TakeOutbox()[0].Conn
	require.NoError(t, fs.Deliver(door.Msg{Op: door.Reset, Conn: id}))
	require.NotZero(t, r.Readiness()&EventOut)
	require.Equal(t, unix.ECONNREFUSED, r.TakeError())
	require.Zero(t, r.TakeError(), "told once")
}

// The door's window each way is a socket's receive buffer: the host side
// never gives the guest more than one holds.
func TestDoorRoomIsASocketBuffer(t *testing.T) {
	require.Equal(t, SocketCapacity, door.Room)
}
