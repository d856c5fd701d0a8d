package door

import (
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/reprise-vm/reprise/abi"
)

// Capture writes door messages as the TCP/IP packets of the conversations
// they were, for Wireshark and tshark: each connection a TCP connection
// between the host's end (the client's address as the program saw it, or
// where the program connected) and the machine (GuestAddr, the
// published port or the program's own) — a handshake when it
// opened, data segments at their stream offsets, an acknowledgement for
// each Ack and Window, FIN or RST at its end. Headers are synthesised;
// the bytes are the conversation's.
type Capture struct {
	w     *pcapgo.Writer
	conns map[uint32]*capConn
	// Packets counts the packets written.
	Packets int
}

// capConn is a connection's sequence space: its host end and the
// program's, each side's first sequence number, bytes (and SYN and FIN)
// sent so far, and what the host end acknowledged of the program's (Ack:
// what reached it). The program acknowledges all the host end sent: a
// message reaches it only once delivered.
type capConn struct {
	host, guest  netip.AddrPort
	hisn, gisn   uint32
	hsent, gsent uint32 // bytes sent, SYN and FIN included
	hacked       uint32
	hfin, gfin   bool
}

// open starts the sequence space of the connection an Open or Connect
// begins: its host end m.Peer, its end in the machine GuestAddr and m.Port.
func (c *Capture) open(m Msg) *capConn {
	k := &capConn{host: m.Peer, guest: netip.AddrPortFrom(GuestAddr, m.Port), hisn: 1000 + m.Conn*7919, gisn: 5000 + m.Conn*104729}
	c.conns[m.Conn] = k
	return k
}

// NewCapture writes a pcap file header to w.
func NewCapture(w io.Writer) (*Capture, error) {
	pw := pcapgo.NewWriter(w)
	if err := pw.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		return nil, err
	}
	return &Capture{w: pw, conns: map[uint32]*capConn{}}, nil
}

// Write adds m, sent by the guest or by the host's end, at time at.
// A message for a connection it has not seen open is skipped.
func (c *Capture) Write(m Msg, fromGuest bool, at time.Time) error {
	if m.Op == Open && !fromGuest {
		k := c.open(m)
		syn := k.segment(false, layers.TCP{SYN: true}, nil)
		synAck := k.segment(true, layers.TCP{SYN: true, ACK: true}, nil)
		k.hacked = 1
		return c.each(at, syn, synAck, k.segment(false, layers.TCP{ACK: true}, nil))
	}
	if m.Op == Datagram {
		return c.each(at, datagram(m, fromGuest))
	}
	if m.Op == Connect && fromGuest { // the program connects out: it is the one that SYNs
		k := c.open(m)
		return c.each(at, k.segment(true, layers.TCP{SYN: true}, nil))
	}
	k := c.conns[m.Conn]
	if k == nil {
		return nil
	}
	switch m.Op {
	case Connected:
		k.hacked = 1
		synAck := k.segment(false, layers.TCP{SYN: true, ACK: true}, nil)
		return c.each(at, synAck, k.segment(true, layers.TCP{ACK: true}, nil))
	case Data:
		return c.each(at, k.segment(fromGuest, layers.TCP{PSH: true, ACK: true}, m.Data))
	case Fin, Close:
		fin := &k.hfin
		if fromGuest {
			fin = &k.gfin
		}
		if *fin { // a Close after a shutdown's Fin
			return nil
		}
		*fin = true
		return c.each(at, k.segment(fromGuest, layers.TCP{FIN: true, ACK: true}, nil))
	case Reset:
		delete(c.conns, m.Conn)
		return c.each(at, k.segment(fromGuest, layers.TCP{RST: true, ACK: true}, nil))
	case Ack: // the host's end took the guest's bytes
		k.hacked += m.N
		return c.each(at, k.segment(false, layers.TCP{ACK: true}, nil))
	case Window: // the guest took the host end's bytes: a window update
		return c.each(at, k.segment(true, layers.TCP{ACK: true}, nil))
	}
	return nil
}

// segment is a packet from one side with flags and payload, its sequence
// and acknowledgement numbers the connection's, which it advances.
func (k *capConn) segment(fromGuest bool, tcp layers.TCP, payload []byte) []gopacket.SerializableLayer {
	src, dst, srcMAC, dstMAC := k.host, k.guest, abi.NetHostMAC, abi.NetGuestMAC
	seq, ack := k.hisn+k.hsent, k.gisn+k.hacked
	sent := &k.hsent
	if fromGuest {
		src, dst, srcMAC, dstMAC = k.guest, k.host, abi.NetGuestMAC, abi.NetHostMAC
		seq, ack, sent = k.gisn+k.gsent, k.hisn+k.hsent, &k.gsent
	}
	*sent += uint32(len(payload))
	if tcp.SYN || tcp.FIN {
		*sent++ // each takes a sequence number
	}
	if !tcp.ACK {
		ack = 0
	}
	tcp.SrcPort, tcp.DstPort, tcp.Seq, tcp.Ack, tcp.Window = layers.TCPPort(src.Port()), layers.TCPPort(dst.Port()), seq, ack, 65535
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
	tcp.SetNetworkLayerForChecksum(ip)
	eth := &layers.Ethernet{SrcMAC: mac(srcMAC), DstMAC: mac(dstMAC), EthernetType: layers.EthernetTypeIPv4}
	return []gopacket.SerializableLayer{eth, ip, &tcp, gopacket.Payload(payload)}
}

// datagram is a published UDP port's datagram between its client and the
// machine.
func datagram(m Msg, fromGuest bool) []gopacket.SerializableLayer {
	guest := netip.AddrPortFrom(GuestAddr, m.Port)
	src, dst, srcMAC, dstMAC := m.Peer, guest, abi.NetHostMAC, abi.NetGuestMAC
	if fromGuest {
		src, dst, srcMAC, dstMAC = guest, m.Peer, abi.NetGuestMAC, abi.NetHostMAC
	}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
	udp := &layers.UDP{SrcPort: layers.UDPPort(src.Port()), DstPort: layers.UDPPort(dst.Port())}
	udp.SetNetworkLayerForChecksum(ip)
	eth := &layers.Ethernet{SrcMAC: mac(srcMAC), DstMAC: mac(dstMAC), EthernetType: layers.EthernetTypeIPv4}
	return []gopacket.SerializableLayer{eth, ip, udp, gopacket.Payload(m.Data)}
}

func mac(v int) net.HardwareAddr {
	return net.HardwareAddr{byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
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
