package netcap

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/vmm/door"
)

// packets reads a capture back, decoded.
func packets(t *testing.T, b []byte) []gopacket.Packet {
	r, err := pcapgo.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	var out []gopacket.Packet
	for {
		data, _, err := r.ReadPacketData()
		if err != nil {
			return out
		}
		p := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
		require.Nil(t, p.ErrorLayer(), "packet %d", len(out)+1)
		out = append(out, p)
	}
}

// A loopback connection over IPv6: the handshake, a write longer than a
// segment cut at mss with the sequence running on, the FINs each
// acknowledged, every segment acknowledging all the other side sent.
func TestLoopbackConnection(t *testing.T) {
	var buf bytes.Buffer
	c, err := New(&buf)
	require.NoError(t, err)
	client, server := netip.MustParseAddrPort("[::1]:40000"), netip.MustParseAddrPort("[::1]:8080")
	at := time.Unix(1e9, 0)
	require.NoError(t, c.Connect(client, server, at))
	require.NoError(t, c.Stream(client, server, []byte("GET / HTTP/1.0\r\n\r\n"), at))
	body := bytes.Repeat([]byte("x"), mss+10)
	require.NoError(t, c.Stream(server, client, body, at))
	require.NoError(t, c.End(server, client, false, at))
	require.NoError(t, c.End(server, client, false, at)) // a close after the shutdown: nothing more
	require.NoError(t, c.End(client, server, false, at))
	require.NoError(t, c.Stream(client, server, []byte("late"), at)) // the connection is gone: skipped
	require.Empty(t, c.loops)

	ps := packets(t, buf.Bytes())
	require.Len(t, ps, 10, "3 handshake, 1 request, 2 response, 2×(FIN, ACK)")
	require.Equal(t, c.Packets, len(ps))
	tcp := func(i int) *layers.TCP { return ps[i].Layer(layers.LayerTypeTCP).(*layers.TCP) }
	for i := range ps {
		require.NotNil(t, ps[i].Layer(layers.LayerTypeIPv6), "packet %d", i+1)
	}
	cisn, sisn := tcp(0).Seq, tcp(1).Seq
	require.True(t, tcp(0).SYN && !tcp(0).ACK)
	require.Equal(t, cisn+1, tcp(1).Ack)
	require.Equal(t, len(body)-mss, len(tcp(5).Payload))
	require.Len(t, tcp(4).Payload, mss)
	require.Equal(t, sisn+1+mss, tcp(5).Seq, "the second segment follows the first")
	require.Equal(t, cisn+1+18, tcp(5).Ack, "the server acknowledges the request")
	require.True(t, tcp(6).FIN)
	require.Equal(t, sisn+1+uint32(len(body))+1, tcp(7).Ack, "the client acknowledges the server's FIN")
	require.True(t, tcp(8).FIN)
	require.Equal(t, tcp(8).Seq+1, tcp(9).Ack)
}

// A door connection a host client opened, data the machine sent that the
// host acknowledged in part, and a reset; a datagram back to a published
// UDP port's client.
func TestDoorConnection(t *testing.T) {
	var buf bytes.Buffer
	c, err := New(&buf)
	require.NoError(t, err)
	at := time.Unix(1e9, 0)
	peer := netip.MustParseAddrPort("10.0.2.2:5555")
	write := func(m door.Msg, fromGuest bool) { require.NoError(t, c.WriteDoor(m, fromGuest, at)) }
	write(door.Msg{Op: door.Open, Conn: 1, Port: 80, Peer: peer}, false)
	write(door.Msg{Op: door.Data, Conn: 1, Data: []byte("hello")}, true)
	write(door.Msg{Op: door.Ack, Conn: 1, N: 3}, false)
	write(door.Msg{Op: door.Reset, Conn: 1}, false)
	write(door.Msg{Op: door.Data, Conn: 1, Data: []byte("gone")}, true) // after the reset: skipped
	write(door.Msg{Op: door.Datagram, Port: 9999, Peer: peer, Data: []byte("answer")}, true)

	ps := packets(t, buf.Bytes())
	require.Len(t, ps, 7)
	tcp := func(i int) *layers.TCP { return ps[i].Layer(layers.LayerTypeTCP).(*layers.TCP) }
	gisn := tcp(1).Seq
	require.Equal(t, layers.TCPPort(80), tcp(3).SrcPort)
	require.Equal(t, gisn+1+3, tcp(4).Ack, "the host acknowledges the 3 bytes its Ack says")
	require.True(t, tcp(5).RST)
	udp := ps[6].Layer(layers.LayerTypeUDP).(*layers.UDP)
	require.Equal(t, layers.UDPPort(9999), udp.SrcPort)
	require.Equal(t, "answer", string(udp.Payload))
	ip := ps[6].Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	require.Equal(t, door.GuestAddr.AsSlice(), []byte(ip.SrcIP.To4()))
}
