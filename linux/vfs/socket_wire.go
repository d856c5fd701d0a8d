package vfs

import "net/netip"

// The loopback's wire: what the machine's own internet sockets send each
// other never leaves the kernel's memory, so nothing of it is on the tape;
// a replay that wants to see it (reprise pcap --internal) sets a Wire and
// is shown each packet Linux's loopback would carry, as the sockets act:
// a connection made, a stream's bytes as they enter the peer's buffer,
// each end's FIN or RST, each UDP datagram sent to a loopback address
// (whether or not a socket took it). Connections through the door are
// not the wire's: their messages are on the tape.

// PacketOp is what a Packet is.
type PacketOp uint8

const (
	// PacketConnect is a TCP connection made: From its client, To its
	// server.
	PacketConnect PacketOp = iota + 1
	// PacketData is a stream's bytes From one end To the other.
	PacketData
	// PacketFin is an end's FIN: it shut its writing, or closed.
	PacketFin
	// PacketReset is an end's RST: it closed with bytes unread (or
	// SO_LINGER of no time), and the connection is gone.
	PacketReset
	// PacketDatagram is a UDP datagram.
	PacketDatagram
)

// Packet is one thing the loopback carried, between two addresses as the
// sockets have them (a v4-mapped address is the IPv4 one).
type Packet struct {
	Op       PacketOp
	From, To netip.AddrPort
	// Data is PacketData's and PacketDatagram's bytes, valid only during
	// the call that shows it.
	Data []byte
}

// Wire sees the loopback's packets, in the order the program's calls made
// them. It must not call back into the file system.
type Wire func(Packet)

// wireTap holds the machine's Wire; every internet socket in a
// connection points to its file system's, as an accepted socket has no
// namespace of its own to find it through.
type wireTap struct{ see Wire }

// SetWire makes w the loopback's observer (nil: none).
func (fs *FileSystem) SetWire(w Wire) { fs.wire.see = w }

// show passes a packet to the wire, if there is one.
func (t *wireTap) show(op PacketOp, from, to netip.AddrPort, b []byte) {
	if t == nil || t.see == nil {
		return
	}
	t.see(Packet{Op: op, From: unmapped(from), To: unmapped(to), Data: b})
}

func unmapped(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// showEnd shows a stream socket's end of its connection as it closes or
// shuts its writing: FIN once, or the RST of a close that drops bytes
// unread.
func (s *Socket) showEnd(reset bool) {
	switch {
	case reset:
		s.wire.show(PacketReset, s.local, s.remote, nil)
	case !s.shutWrite:
		s.wire.show(PacketFin, s.local, s.remote, nil)
	}
}
