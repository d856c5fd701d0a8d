package vfs

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/vmm/door"
)

// Datagrams by address: a datagram socket not made in a pair sends to the
// socket an address names, each time (sendto) or by default once
// connected — UDP over the loopback by port, AF_UNIX by path or abstract
// name (the caller finds the socket). Each message keeps who sent it, for
// recvfrom. A connected socket receives only from where it connected.
// UDP drops what finds no room or no socket, as Linux's does (a connected
// sender learns of the latter as ECONNREFUSED on its next call); AF_UNIX
// waits for room, and refuses a missing receiver.

// Sender is who sent a message: a name (AF_UNIX) or an address (UDP);
// the zero Sender is an unnamed socket or a pair's peer.
type Sender struct {
	Name string
	Addr netip.AddrPort
}

// maxUDP is the largest UDP payload (65 535 less the IP and UDP headers).
const maxUDP = 65507

// udp reports whether the socket is a UDP one.
func (s *Socket) udp() bool { return s.inet() && s.Type == unix.SOCK_DGRAM }

// SendTo sends b as one message to to (AF_UNIX's receiver, found by the
// caller; nil for a UDP socket, which finds it by addr): EMSGSIZE past
// what a message may hold, EPROTOTYPE for a receiver of another type,
// EPERM for one connected elsewhere, ECONNREFUSED for one gone; an
// AF_UNIX receiver with no room blocks (EAGAIN nonblocking).
func (fs *FileSystem) SendTo(s *Socket, b []byte, to *Socket, addr netip.AddrPort, nonblocking bool) (int, error) {
	if err := s.takeError(); err != nil {
		return 0, err
	}
	if s.shutWrite {
		return 0, ErrNoReaders
	}
	if s.udp() {
		return fs.sendUDP(s, b, addr)
	}
	switch {
	case len(b)+msgOverhead > SocketCapacity:
		return 0, unix.EMSGSIZE
	case to == nil || to.closed:
		return 0, unix.ECONNREFUSED
	case to.Type != s.Type:
		return 0, unix.EPROTOTYPE
	case to.dest != nil && to.dest != s || to.peer != nil && to.peer != s:
		return 0, unix.EPERM
	case to.room() < len(b)+msgOverhead && nonblocking:
		return 0, unix.EAGAIN
	case to.room() < len(b)+msgOverhead:
		return 0, ErrWouldBlock
	}
	to.deliver(b, Sender{Name: s.name})
	return len(b), nil
}

// sendUDP sends a datagram to addr, binding an unbound sender to an
// ephemeral port first.
func (fs *FileSystem) sendUDP(s *Socket, b []byte, addr netip.AddrPort) (int, error) {
	to := addr.Addr()
	if to.IsUnspecified() {
		to = loopback(wildcard(s.Family))
	}
	switch {
	case len(b) > maxUDP:
		return 0, unix.EMSGSIZE
	case !Local(to) && !fs.door.open:
		return 0, unix.ENETUNREACH
	case addr.Port() == 0:
		return 0, unix.EINVAL
	}
	if !s.bound() {
		if err := fs.BindInet(s, netip.AddrPortFrom(wildcard(s.Family), 0), false); err != nil {
			return 0, err
		}
	}
	if !Local(to) { // through the door: a reply to a published UDP port's client, or lost
		fs.door.send(door.Msg{Op: door.Datagram, Port: s.local.Port(), Peer: netip.AddrPortFrom(to.Unmap(), addr.Port()), Data: append([]byte(nil), b...)})
		return len(b), nil
	}
	from := s.local.Addr()
	if from.IsUnspecified() {
		from = loopback(to)
	}
	dst := netip.AddrPortFrom(to, addr.Port())
	r := fs.udpReceiver(dst)
	src := netip.AddrPortFrom(from.Unmap(), s.local.Port())
	fs.wire.show(PacketDatagram, src, dst, b)
	switch {
	case r == nil:
		if s.remote.IsValid() {
			s.err = unix.ECONNREFUSED // the loopback's port unreachable, for a connected sender
		}
	case r.remote.IsValid() && (r.remote.Addr().Unmap() != src.Addr() || r.remote.Port() != src.Port()):
		// connected elsewhere: not for it
	case r.room() >= len(b)+msgOverhead && !r.shutRead:
		r.deliver(b, Sender{Addr: netip.AddrPortFrom(as(r.Family, src.Addr()), src.Port())})
	}
	return len(b), nil
}

// arriveDatagram delivers a datagram a host client sent a published UDP
// port to the socket bound there (on 127.0.0.1, or ::1), from the client
// as the program sees it; with none, or no room, it is dropped.
func (fs *FileSystem) arriveDatagram(m door.Msg) {
	r, _ := atLoopback(m.Port, fs.udpReceiver)
	if r == nil || r.shutRead || r.room() < len(m.Data)+msgOverhead ||
		r.remote.IsValid() && r.remote.Addr().Unmap() != m.Peer.Addr() {
		return
	}
	r.deliver(m.Data, Sender{Addr: netip.AddrPortFrom(as(r.Family, m.Peer.Addr()), m.Peer.Port())})
}

// udpReceiver is the UDP socket bound to addr, or to the wildcard of its
// port, nil if none.
func (fs *FileSystem) udpReceiver(addr netip.AddrPort) *Socket {
	return fs.boundAt(addr, (*Socket).udp)
}

// deliver queues a message from sender.
func (s *Socket) deliver(b []byte, from Sender) {
	s.buf = append(s.buf, b...)
	s.msgs = append(s.msgs, len(b))
	s.senders = append(s.senders, from)
	s.queue.Notify(EventIn)
}

// ConnectDgram connects a datagram socket: an AF_UNIX one to to, its
// default receiver and the only one it then receives from (nil, or
// disconnect, to undo); a UDP one to addr (disconnect: AF_UNSPEC),
// binding an unbound one, whose address becomes the loopback's.
func (fs *FileSystem) ConnectDgram(s *Socket, to *Socket, addr netip.AddrPort, disconnect bool) error {
	if disconnect {
		s.dest, s.remote = nil, netip.AddrPort{}
		return nil
	}
	if !s.udp() {
		switch {
		case to == nil || to.closed:
			return unix.ECONNREFUSED
		case to.Type != s.Type:
			return unix.EPROTOTYPE
		}
		s.dest = to
		return nil
	}
	a := addr.Addr()
	if a.IsUnspecified() {
		a = loopback(wildcard(s.Family))
	}
	if !Local(a) {
		return unix.ENETUNREACH
	}
	if !s.bound() {
		if err := fs.BindInet(s, netip.AddrPortFrom(wildcard(s.Family), 0), false); err != nil {
			return err
		}
	}
	if s.local.Addr().IsUnspecified() {
		s.local = netip.AddrPortFrom(loopback(a), s.local.Port())
	}
	s.remote = netip.AddrPortFrom(a, addr.Port())
	return nil
}

// Dest is the socket an AF_UNIX datagram socket connected to, nil if
// none.
func (s *Socket) Dest() *Socket { return s.dest }

// takeError returns and clears an error a connected UDP socket has yet
// to report (SO_ERROR, or its next call).
func (s *Socket) takeError() error {
	if err := s.TakeError(); err != 0 {
		return err
	}
	return nil
}

// TakeError is takeError for SO_ERROR: the error number, 0 for none.
func (s *Socket) TakeError() unix.Errno {
	err := s.err
	s.err = 0
	return err
}
