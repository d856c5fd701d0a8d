package netback

import (
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/stretchr/testify/require"
)

func TestUDPFrameRoundTrip(t *testing.T) {
	f, err := UDPFrame(4000, 7777, []byte("hello"))
	require.NoError(t, err)
	p := gopacket.NewPacket(f, layers.LayerTypeEthernet, gopacket.Default)
	require.Nil(t, p.ErrorLayer())
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	require.True(t, ip.SrcIP.Equal(HostIP))
	require.True(t, ip.DstIP.Equal(GuestIP))
	udp := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	require.Equal(t, layers.UDPPort(7777), udp.DstPort)
	require.Equal(t, []byte("hello"), udp.Payload)

	_, _, ok := ParseUDP(f) // addressed to the guest, not the host
	require.False(t, ok)
	_, _, ok = ParseUDP([]byte{1, 2, 3})
	require.False(t, ok)
}

// A real socket on 127.0.0.1: a datagram in becomes a frame for the guest;
// the guest's reply frame goes back to the sender's port.
func TestUDPBackend(t *testing.T) {
	var raised atomic.Int32
	u, err := ListenUDP("127.0.0.1:0", func() { raised.Add(1) })
	require.NoError(t, err)
	defer u.Close()
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer peer.Close()
	_, err = peer.WriteToUDP([]byte("ping"), u.Addr())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return u.Backlog() == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, int32(1), raised.Load())
	frames := u.Take(10)
	require.Len(t, frames, 1)
	p := gopacket.NewPacket(frames[0].Data, layers.LayerTypeEthernet, gopacket.Default)
	udp := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	require.Equal(t, []byte("ping"), udp.Payload)
	peerPort := peer.LocalAddr().(*net.UDPAddr).Port
	require.Equal(t, layers.UDPPort(peerPort), udp.SrcPort)
	require.Equal(t, layers.UDPPort(u.Addr().Port), udp.DstPort)

	// The guest answers: a frame from the guest to the host side's port.
	reply := guestFrame(t, uint16(u.Addr().Port), uint16(peerPort), []byte("pong"))
	require.NoError(t, u.Send(reply))
	buf := make([]byte, 100)
	require.NoError(t, peer.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, _, err := peer.ReadFromUDP(buf)
	require.NoError(t, err)
	require.Equal(t, "pong", string(buf[:n]))

	require.NoError(t, u.Send([]byte("not a frame")))
	require.Equal(t, uint64(1), u.Unsent)

	_, err = ListenUDP("192.0.2.1:7777", func() {})
	require.ErrorContains(t, err, "not a loopback address")
}

func guestFrame(t *testing.T, src, dst uint16, payload []byte) []byte {
	eth := &layers.Ethernet{SrcMAC: GuestMAC, DstMAC: HostMAC, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: GuestIP, DstIP: HostIP}
	udp := &layers.UDP{SrcPort: layers.UDPPort(src), DstPort: layers.UDPPort(dst)}
	require.NoError(t, udp.SetNetworkLayerForChecksum(ip))
	buf := gopacket.NewSerializeBuffer()
	require.NoError(t, gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(payload)))
	return buf.Bytes()
}

// A capture is fed at its own pace and readdressed to the guest.
func TestPcapBackend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.pcap")
	f, err := os.Create(path)
	require.NoError(t, err)
	w := pcapgo.NewWriter(f)
	require.NoError(t, w.WriteFileHeader(65535, layers.LinkTypeEthernet))
	t0 := time.Unix(1700000000, 0)
	for i, payload := range []string{"a", "b", "c"} {
		frame := guestFrame(t, 1000, 2000, []byte(payload)) // foreign addressing
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * 30 * time.Millisecond), CaptureLength: len(frame), Length: len(frame)}
		require.NoError(t, w.WritePacket(ci, frame))
	}
	require.NoError(t, f.Close())

	start := time.Now()
	p, err := OpenPcap(path, func() {})
	require.NoError(t, err)
	defer p.Close()
	require.Eventually(t, func() bool { return p.Backlog() == 3 }, 5*time.Second, time.Millisecond)
	require.GreaterOrEqual(t, time.Since(start), 60*time.Millisecond, "frames were not fed at the capture's pace")
	frames := p.Take(3)
	for i, fr := range frames {
		pk := gopacket.NewPacket(fr.Data, layers.LayerTypeEthernet, gopacket.Default)
		ip := pk.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		require.True(t, ip.DstIP.Equal(GuestIP))
		require.True(t, ip.SrcIP.Equal(HostIP))
		require.Equal(t, []byte{"abc"[i]}, pk.Layer(layers.LayerTypeUDP).(*layers.UDP).Payload)
	}

	_, err = OpenPcap(filepath.Join(t.TempDir(), "missing.pcap"), func() {})
	require.Error(t, err)
}
