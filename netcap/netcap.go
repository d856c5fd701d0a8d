// Package netcap writes conversations as the TCP/IP packets of a pcap
// file (Ethernet) that Wireshark and tshark read as the conversations
// they were: each TCP connection a handshake, data segments at their
// stream offsets with the acknowledgements they had, FIN or RST at each
// end; each UDP datagram one packet. Headers are synthesised — the
// recordings keep conversations, not packets — the bytes are the
// conversations'.
//
// Two kinds of conversation reach it: a Linux program's published and
// egress connections, as the door's messages (door.go), and the traffic
// between the program's own sockets on its loopback (loopback.go).
package netcap

import (
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Capture is a pcap file being written.
type Capture struct {
	w     *pcapgo.Writer
	door  map[uint32]*conn
	loops map[[2]netip.AddrPort]*conn
	made  uint32 // loopback connections begun, to number their sequences
	// Packets counts the packets written.
	Packets int
}

// snapLen is what the file says a packet may hold: tcpdump's default,
// past the loopback's largest packet.
const snapLen = 262144

// mss is the most bytes one data segment carries: the loopback's (its
// MTU 65 536 less the IPv4 and TCP headers and timestamps), which an
// IPv6 packet holds too. Longer writes are cut into segments of it.
const mss = 65483

// New writes a pcap file header to w.
func New(w io.Writer) (*Capture, error) {
	pw := pcapgo.NewWriter(w)
	if err := pw.WriteFileHeader(snapLen, layers.LinkTypeEthernet); err != nil {
		return nil, err
	}
	return &Capture{w: pw, door: map[uint32]*conn{}, loops: map[[2]netip.AddrPort]*conn{}}, nil
}

// end is one side of a connection's sequence space.
type end struct {
	addr netip.AddrPort
	mac  net.HardwareAddr
	// isn is its first sequence number; sent, what it sent so far (SYN
	// and FIN take one each).
	isn, sent uint32
	// acked is how much of the other side's sequence space it
	// acknowledged — unless acksAll: its kernel takes everything sent it
	// as it arrives (the machine's).
	acked   uint32
	acksAll bool
	fin     bool
}

// conn is a TCP connection's two sides.
type conn struct{ ends [2]end }

// segment is a packet from side from with flags and payload, its
// sequence and acknowledgement numbers the connection's, which it
// advances.
func (k *conn) segment(from int, tcp layers.TCP, payload []byte) []gopacket.SerializableLayer {
	a, b := &k.ends[from], &k.ends[1-from]
	seq, ack := a.isn+a.sent, b.isn+a.acked
	if a.acksAll {
		ack = b.isn + b.sent
	}
	a.sent += uint32(len(payload))
	if tcp.SYN || tcp.FIN {
		a.sent++
	}
	if !tcp.ACK {
		ack = 0
	}
	tcp.SrcPort, tcp.DstPort, tcp.Seq, tcp.Ack, tcp.Window = layers.TCPPort(a.addr.Port()), layers.TCPPort(b.addr.Port()), seq, ack, 65535
	eth, ip := frame(a.addr.Addr(), b.addr.Addr(), a.mac, b.mac, layers.IPProtocolTCP)
	tcp.SetNetworkLayerForChecksum(ip)
	return []gopacket.SerializableLayer{eth, ip.(gopacket.SerializableLayer), &tcp, gopacket.Payload(payload)}
}

// data is the segments carrying b from side from, mss bytes at most each.
func (k *conn) data(from int, b []byte) [][]gopacket.SerializableLayer {
	var out [][]gopacket.SerializableLayer
	for len(b) > 0 {
		n := min(len(b), mss)
		out = append(out, k.segment(from, layers.TCP{PSH: true, ACK: true}, b[:n]))
		b = b[n:]
	}
	return out
}

// finish is side from's FIN (once: nothing if it sent one).
func (k *conn) finish(from int) [][]gopacket.SerializableLayer {
	if k.ends[from].fin {
		return nil
	}
	k.ends[from].fin = true
	return [][]gopacket.SerializableLayer{k.segment(from, layers.TCP{FIN: true, ACK: true}, nil)}
}

// frame is the Ethernet and IP headers of a packet from src to dst of
// protocol proto: IPv4 if src is, else IPv6 (an IPv4 dst mapped).
func frame(src, dst netip.Addr, srcMAC, dstMAC net.HardwareAddr, proto layers.IPProtocol) (*layers.Ethernet, gopacket.NetworkLayer) {
	if src.Is4() {
		eth := &layers.Ethernet{SrcMAC: srcMAC, DstMAC: dstMAC, EthernetType: layers.EthernetTypeIPv4}
		return eth, &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: src.AsSlice(), DstIP: dst.Unmap().AsSlice()}
	}
	d16 := dst.As16()
	eth := &layers.Ethernet{SrcMAC: srcMAC, DstMAC: dstMAC, EthernetType: layers.EthernetTypeIPv6}
	return eth, &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: src.AsSlice(), DstIP: d16[:]}
}

// datagram is a UDP packet from src to dst.
func datagram(src, dst netip.AddrPort, srcMAC, dstMAC net.HardwareAddr, payload []byte) []gopacket.SerializableLayer {
	eth, ip := frame(src.Addr(), dst.Addr(), srcMAC, dstMAC, layers.IPProtocolUDP)
	udp := &layers.UDP{SrcPort: layers.UDPPort(src.Port()), DstPort: layers.UDPPort(dst.Port())}
	udp.SetNetworkLayerForChecksum(ip)
	return []gopacket.SerializableLayer{eth, ip.(gopacket.SerializableLayer), udp, gopacket.Payload(payload)}
}

// each writes packets at time at.
func (c *Capture) each(at time.Time, packets ...[]gopacket.SerializableLayer) error {
	for _, p := range packets {
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, p...); err != nil {
			return err
		}
		b := buf.Bytes()
		if err := c.w.WritePacket(gopacket.CaptureInfo{Timestamp: at, CaptureLength: len(b), Length: len(b)}, b); err != nil {
			return err
		}
		c.Packets++
	}
	return nil
}
