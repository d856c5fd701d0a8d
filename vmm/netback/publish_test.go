package netback

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/vmm/door"
)

// guestSide collects the door's messages for the guest, as deliveries
// would take them.
type guestSide struct {
	t *testing.T
	d *Door
}

// until takes messages until cond holds of those taken so far.
func (g guestSide) until(cond func([]door.Msg) bool) []door.Msg {
	g.t.Helper()
	var got []door.Msg
	deadline := time.Now().Add(10 * time.Second)
	for !cond(got) {
		require.True(g.t, time.Now().Before(deadline), "waited for the door: got %v", got)
		for _, f := range g.d.Take(64) {
			m, err := door.Parse(f.Data)
			require.NoError(g.t, err)
			got = append(got, m)
		}
		time.Sleep(time.Millisecond)
	}
	return got
}

func dataBytes(ms []door.Msg) int {
	n := 0
	for _, m := range ms {
		n += len(m.Data)
	}
	return n
}

func (g guestSide) send(m door.Msg) { require.NoError(g.t, g.d.Send(m.Encode())) }

// The host side of a published connection, on real sockets: the client's
// bytes come in no faster than the guest gives window for, in messages
// that add up (at most MaxData each); what the guest sends reaches the
// client and is acknowledged; the guest's close is the client's end of
// file, the client's its Fin.
func TestDoorWindowsAndEnds(t *testing.T) {
	d, err := OpenDoor([]Publish{{Host: netip.MustParseAddrPort("127.0.0.1:0"), Guest: 80}}, nil, func() {})
	require.NoError(t, err)
	defer d.Close()
	g := guestSide{t, d}
	c, err := net.Dial("tcp", d.Addrs()[0].String())
	require.NoError(t, err)
	defer c.Close()
	open := g.until(func(ms []door.Msg) bool { return len(ms) == 1 })[0]
	require.Equal(t, door.Open, open.Op)
	require.Equal(t, uint16(80), open.Port)
	require.Equal(t, door.HostAddr, open.Peer.Addr())
	require.Equal(t, uint16(c.LocalAddr().(*net.TCPAddr).Port), open.Peer.Port())

	go c.Write(make([]byte, 2*door.Room)) // blocks once the host's buffers fill: fine
	in := g.until(func(ms []door.Msg) bool { return dataBytes(ms) >= door.Room })
	time.Sleep(50 * time.Millisecond)
	in = append(in, g.until(func([]door.Msg) bool { return true })...)
	require.Equal(t, door.Room, dataBytes(in), "no more than a window before the guest gives room")
	for _, m := range in {
		require.LessOrEqual(t, len(m.Data), door.MaxData)
	}
	g.send(door.Msg{Op: door.Window, Conn: open.Conn, N: 1000})
	more := g.until(func(ms []door.Msg) bool { return dataBytes(ms) >= 1000 })
	require.Equal(t, uint64(door.Room), more[0].Offset)

	g.send(door.Msg{Op: door.Data, Conn: open.Conn, Data: []byte("response")})
	g.send(door.Msg{Op: door.Close, Conn: open.Conn})
	acks := g.until(func(ms []door.Msg) bool { return len(ms) > 0 })
	require.Equal(t, door.Msg{Op: door.Ack, Conn: open.Conn, N: 8}.String(), acks[0].String())
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	require.Equal(t, "response", string(got), "then end of file")

	c2, err := net.Dial("tcp", d.Addrs()[0].String())
	require.NoError(t, err)
	o2 := g.until(func(ms []door.Msg) bool { return len(ms) == 1 })[0]
	require.NoError(t, c2.(*net.TCPConn).CloseWrite())
	fin := g.until(func(ms []door.Msg) bool { return len(ms) == 1 })[0]
	require.Equal(t, door.Msg{Op: door.Fin, Conn: o2.Conn}.String(), fin.String())
	c2.Close()
}

// Past MaxDoorConns open connections the door accepts no more: clients
// wait in the host's backlog, and one is taken when another closes.
func TestDoorBoundsConnections(t *testing.T) {
	d, err := OpenDoor([]Publish{{Host: netip.MustParseAddrPort("127.0.0.1:0"), Guest: 80}}, nil, func() {})
	require.NoError(t, err)
	defer d.Close()
	g := guestSide{t, d}
	var conns []net.Conn
	for range MaxDoorConns + 3 {
		c, err := net.Dial("tcp", d.Addrs()[0].String())
		require.NoError(t, err)
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	opens := g.until(func(ms []door.Msg) bool { return len(ms) >= MaxDoorConns })
	time.Sleep(100 * time.Millisecond)
	opens = append(opens, g.until(func([]door.Msg) bool { return true })...)
	require.Len(t, opens, MaxDoorConns)
	g.send(door.Msg{Op: door.Reset, Conn: opens[0].Conn}) // the guest refuses one
	next := g.until(func(ms []door.Msg) bool { return len(ms) > 0 })
	require.Equal(t, door.Open, next[0].Op, "a waiting client is taken")
	require.Equal(t, uint32(MaxDoorConns+1), next[0].Conn)
}

func TestParsePublish(t *testing.T) {
	for s, want := range map[string]string{
		"8080:80":             "127.0.0.1:8080:80/tcp",
		"0.0.0.0:8080:80/tcp": "0.0.0.0:8080:80/tcp",
		"[::1]:9000:9000":     "[::1]:9000:9000/tcp",
		"192.168.1.5:1:65535": "192.168.1.5:1:65535/tcp",
	} {
		p, err := ParsePublish(s)
		require.NoError(t, err, s)
		require.Equal(t, want, p.String())
	}
}

// A guest UDP port is published once: its replies leave from one host
// address.
func TestDoorOneUDPAddressAPort(t *testing.T) {
	_, err := OpenDoor([]Publish{{Host: netip.MustParseAddrPort("127.0.0.1:0"), Guest: 53, UDP: true},
		{Host: netip.MustParseAddrPort("127.0.0.1:0"), Guest: 53, UDP: true}}, nil, func() {})
	require.ErrorContains(t, err, "guest port 53 is published over UDP already")
}
