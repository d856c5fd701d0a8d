package netback

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// UDP is a user-mode network on a host UDP socket. Each datagram arriving
// at the socket becomes a frame from HostIP:<sender's port> to
// GuestIP:<the socket's port>; each UDP frame the guest sends to HostIP:P
// is sent from the socket to 127.0.0.1:P. Only loopback peers exist: the
// guest reaches nothing else.
type UDP struct {
	queue
	conn      *net.UDPConn
	guestPort uint16
	done      chan struct{}
	Unsent    uint64 // guest frames that were not UDP to the host
}

// ListenUDP binds addr (which must be a loopback address) and forwards
// what arrives to the guest's UDP port of the same number. raise is called
// each time a frame is queued.
func ListenUDP(addr string, raise func()) (*UDP, error) {
	ua, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, fmt.Errorf("netback: %q: %w", addr, err)
	}
	if !ua.IP.IsLoopback() {
		return nil, fmt.Errorf("netback: %s is not a loopback address: the user-mode network only talks to this host", addr)
	}
	conn, err := net.ListenUDP("udp4", ua)
	if err != nil {
		return nil, fmt.Errorf("netback: %w", err)
	}
	u := &UDP{queue: queue{raise: raise}, conn: conn, guestPort: uint16(conn.LocalAddr().(*net.UDPAddr).Port), done: make(chan struct{})}
	go u.receive()
	return u, nil
}

// Addr is the bound host address.
func (u *UDP) Addr() *net.UDPAddr { return u.conn.LocalAddr().(*net.UDPAddr) }

func (u *UDP) receive() {
	defer close(u.done)
	buf := make([]byte, 65535)
	for {
		n, from, err := u.conn.ReadFromUDP(buf)
		if err != nil {
			return // closed
		}
		at := time.Now()
		frame, err := UDPFrame(uint16(from.Port), u.guestPort, buf[:n])
		if err != nil {
			continue // a datagram too large for one frame
		}
		u.push(Frame{Data: frame, At: at})
	}
}

// UDPFrame builds the Ethernet/IPv4/UDP frame carrying payload from the
// host side's port src to the guest's port dst.
func UDPFrame(src, dst uint16, payload []byte) ([]byte, error) {
	eth := &layers.Ethernet{SrcMAC: HostMAC, DstMAC: GuestMAC, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: HostIP, DstIP: GuestIP}
	udp := &layers.UDP{SrcPort: layers.UDPPort(src), DstPort: layers.UDPPort(dst)}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		return nil, err
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, udp, gopacket.Payload(payload)); err != nil {
		return nil, err
	}
	if len(buf.Bytes()) > 1514 {
		return nil, errors.New("netback: datagram too large for one frame")
	}
	return buf.Bytes(), nil
}

// ParseUDP extracts (destination port, payload) from a guest frame that is
// UDP over IPv4 to the host side; ok is false for anything else.
func ParseUDP(frame []byte) (dst uint16, payload []byte, ok bool) {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.NoCopy)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if ip == nil || udp == nil || !ip.DstIP.Equal(HostIP) {
		return 0, nil, false
	}
	return uint16(udp.DstPort), udp.Payload, true
}

// Send sends a guest frame's UDP payload to 127.0.0.1 at its destination
// port. Frames that are not UDP to the host side are counted and dropped.
func (u *UDP) Send(frame []byte) error {
	dst, payload, ok := ParseUDP(frame)
	if !ok {
		u.Unsent++
		return nil
	}
	// A peer that went away is the peer's business, not the guest's.
	_, _ = u.conn.WriteToUDP(payload, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(dst)})
	return nil
}

// Close stops receiving.
func (u *UDP) Close() error {
	err := u.conn.Close()
	<-u.done
	return err
}
