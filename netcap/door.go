package netcap

import (
	"net/netip"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/reprise-vm/reprise/vmm/door"
	"github.com/reprise-vm/reprise/vmm/netback"
)

// The door's connections: between the host's end (the client's address
// as the program saw it, or where the program connected) and the machine
// (door.GuestAddr, the published port or the program's own), side 0 the
// host's and 1 the machine's. The machine acknowledges all the host's end
// sent, as a message reaches it only once delivered; the host's end
// acknowledges what its Ack messages say reached it.
const (
	hostSide  = 0
	guestSide = 1
)

// The ends' hardware addresses are the user-mode network's.
var hostMAC, guestMAC = netback.HostMAC, netback.GuestMAC

// openDoor starts the sequence space of the connection an Open or Connect
// begins.
func (c *Capture) openDoor(m door.Msg) *conn {
	k := &conn{ends: [2]end{
		{addr: m.Peer, mac: hostMAC, isn: 1000 + m.Conn*7919},
		{addr: netip.AddrPortFrom(door.GuestAddr, m.Port), mac: guestMAC, isn: 5000 + m.Conn*104729, acksAll: true},
	}}
	c.door[m.Conn] = k
	return k
}

// WriteDoor adds door message m, sent by the machine or by the host's
// end, at time at. A message for a connection it has not seen open is
// skipped.
func (c *Capture) WriteDoor(m door.Msg, fromGuest bool, at time.Time) error {
	from := hostSide
	if fromGuest {
		from = guestSide
	}
	switch {
	case m.Op == door.Open && !fromGuest:
		k := c.openDoor(m)
		syn := k.segment(hostSide, layers.TCP{SYN: true}, nil)
		synAck := k.segment(guestSide, layers.TCP{SYN: true, ACK: true}, nil)
		k.ends[hostSide].acked = 1
		return c.each(at, syn, synAck, k.segment(hostSide, layers.TCP{ACK: true}, nil))
	case m.Op == door.Datagram:
		guest := netip.AddrPortFrom(door.GuestAddr, m.Port)
		if fromGuest {
			return c.each(at, datagram(guest, m.Peer, guestMAC, hostMAC, m.Data))
		}
		return c.each(at, datagram(m.Peer, guest, hostMAC, guestMAC, m.Data))
	case m.Op == door.Connect && fromGuest: // the program connects out: it is the one that SYNs
		k := c.openDoor(m)
		return c.each(at, k.segment(guestSide, layers.TCP{SYN: true}, nil))
	}
	k := c.door[m.Conn]
	if k == nil {
		return nil
	}
	switch m.Op {
	case door.Connected:
		k.ends[hostSide].acked = 1
		synAck := k.segment(hostSide, layers.TCP{SYN: true, ACK: true}, nil)
		return c.each(at, synAck, k.segment(guestSide, layers.TCP{ACK: true}, nil))
	case door.Data:
		return c.each(at, k.data(from, m.Data)...)
	case door.Fin, door.Close: // a Close after a shutdown's Fin adds nothing
		return c.each(at, k.finish(from)...)
	case door.Reset:
		delete(c.door, m.Conn)
		return c.each(at, k.segment(from, layers.TCP{RST: true, ACK: true}, nil))
	case door.Ack: // the host's end took the machine's bytes
		k.ends[hostSide].acked += m.N
		return c.each(at, k.segment(hostSide, layers.TCP{ACK: true}, nil))
	case door.Window: // the machine took the host end's bytes: a window update
		return c.each(at, k.segment(guestSide, layers.TCP{ACK: true}, nil))
	}
	return nil
}
