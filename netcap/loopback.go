package netcap

import (
	"net"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// The loopback's connections, between two of the machine's own sockets
// and known by their two addresses; side 0 is the client's. Both ends'
// kernel is the machine's, which takes what is sent as it is sent: every
// segment acknowledges all the other side sent.

// loMAC is the loopback device's address (none: zeros, as tcpdump -i lo
// shows it).
var loMAC = net.HardwareAddr{0, 0, 0, 0, 0, 0}

// pair is a connection's key: its two addresses, the lesser first.
func pair(a, b netip.AddrPort) [2]netip.AddrPort {
	if b.Compare(a) < 0 {
		a, b = b, a
	}
	return [2]netip.AddrPort{a, b}
}

// Connect adds the handshake of a connection client made to server on the
// machine's loopback, at time at; a connection the two addresses had
// before is forgotten.
func (c *Capture) Connect(client, server netip.AddrPort, at time.Time) error {
	c.made++
	n := c.made
	k := &conn{ends: [2]end{
		{addr: client, mac: loMAC, isn: 3000 + n*7919, acksAll: true},
		{addr: server, mac: loMAC, isn: 7000 + n*104729, acksAll: true},
	}}
	c.loops[pair(client, server)] = k
	syn := k.segment(0, layers.TCP{SYN: true}, nil)
	synAck := k.segment(1, layers.TCP{SYN: true, ACK: true}, nil)
	return c.each(at, syn, synAck, k.segment(0, layers.TCP{ACK: true}, nil))
}

// loop is the loopback connection between from and to, and from's side
// of it; nil if Connect never began one.
func (c *Capture) loop(from, to netip.AddrPort) (*conn, int) {
	k := c.loops[pair(from, to)]
	if k == nil || k.ends[0].addr == from {
		return k, 0
	}
	return k, 1
}

// Stream adds bytes b that from sent to to over their connection, at time
// at (skipped if Connect never began it).
func (c *Capture) Stream(from, to netip.AddrPort, b []byte, at time.Time) error {
	k, side := c.loop(from, to)
	if k == nil {
		return nil
	}
	return c.each(at, k.data(side, b)...)
}

// End adds from's end of its connection to to at time at: its FIN, which
// the other side acknowledges, or (reset) its RST, after which the
// connection is gone.
func (c *Capture) End(from, to netip.AddrPort, reset bool, at time.Time) error {
	k, side := c.loop(from, to)
	switch {
	case k == nil:
		return nil
	case reset:
		delete(c.loops, pair(from, to))
		return c.each(at, k.segment(side, layers.TCP{RST: true, ACK: true}, nil))
	}
	fin := k.finish(side)
	if len(fin) == 0 {
		return nil
	}
	if k.ends[0].fin && k.ends[1].fin {
		delete(c.loops, pair(from, to))
	}
	return c.each(at, append(fin, k.segment(1-side, layers.TCP{ACK: true}, nil))...)
}

// Datagram adds a UDP datagram from sent to to on the loopback, at time
// at.
func (c *Capture) Datagram(from, to netip.AddrPort, b []byte, at time.Time) error {
	return c.each(at, datagram(from, to, loMAC, loMAC, b))
}
