package vfs

import (
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/vmm/door"
)

// Internet sockets (AF_INET, AF_INET6) over the machine's loopback: TCP
// as streams between the program's own sockets, found by port. A socket
// binds an address the machine has (a loopback address, or the
// wildcard); AF_INET6 is dual-stack unless IPV6_V6ONLY, an IPv4 address
// then seen v4-mapped. Nothing reaches the host: a connection to another
// address is ENETUNREACH.

// The ephemeral ports (net.ipv4.ip_local_port_range), taken lowest free
// first, so a replay takes the recording's.
const (
	ephemeralLow  = 32768
	ephemeralHigh = 60999
	privilegedTop = 1024 // ports below need root (EACCES)
)

// inet reports whether the socket is an internet one.
func (s *Socket) inet() bool { return s.Family == unix.AF_INET || s.Family == unix.AF_INET6 }

// protocol is the socket's protocol number (SO_PROTOCOL).
func (s *Socket) protocol() int {
	switch {
	case s.inet() && s.Stream():
		return unix.IPPROTO_TCP
	case s.inet():
		return unix.IPPROTO_UDP
	}
	return 0
}

// bound reports whether the socket has its own address.
func (s *Socket) bound() bool { return s.name != "" || s.local.IsValid() }

// Local and Remote are an internet socket's address and its peer's.
func (s *Socket) Local() netip.AddrPort  { return s.local }
func (s *Socket) Remote() netip.AddrPort { return s.remote }

// v6only reports whether an AF_INET6 socket takes IPv6 only.
func (s *Socket) v6only() bool { return s.flag(unix.IPPROTO_IPV6, unix.IPV6_V6ONLY) }

// Local reports whether a is an address of the machine's: a loopback one
// or the wildcard, either family (v4-mapped too).
func Local(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsUnspecified()
}

// covers reports whether a socket bound to a, of family fam (v6only:
// IPv6 alone), takes what is sent to b.
func covers(a netip.Addr, fam int, v6only bool, b netip.Addr) bool {
	b4 := b.Unmap().Is4()
	switch {
	case fam == unix.AF_INET && !b4:
		return false
	case fam == unix.AF_INET6 && b4 && v6only:
		return false
	case a.IsUnspecified():
		return true
	}
	return a.Unmap() == b.Unmap()
}

// clash reports whether two sockets' bindings to one port overlap.
func clash(a, b *Socket) bool {
	return covers(a.local.Addr(), a.Family, a.v6only(), b.local.Addr()) || covers(b.local.Addr(), b.Family, b.v6only(), a.local.Addr())
}

// BindInet binds an internet socket to addr, port 0 choosing an
// ephemeral one: EINVAL for one bound already, EADDRNOTAVAIL for an
// address the machine has not, EACCES for a privileged port unless root,
// EADDRINUSE where a socket of the same protocol is bound to an
// overlapping address (both with SO_REUSEADDR and neither listening may
// share).
func (fs *FileSystem) BindInet(s *Socket, addr netip.AddrPort, root bool) error {
	switch {
	case s.bound():
		return unix.EINVAL
	case !Local(addr.Addr()):
		return unix.EADDRNOTAVAIL
	case addr.Port() != 0 && addr.Port() < privilegedTop && !root:
		return unix.EACCES
	}
	s.local = addr
	if addr.Port() == 0 {
		for p := uint16(ephemeralLow); p <= ephemeralHigh; p++ {
			if s.local = netip.AddrPortFrom(addr.Addr(), p); fs.portFree(s) {
				fs.takePort(s)
				return nil
			}
		}
		s.local = netip.AddrPort{}
		return unix.EADDRINUSE
	}
	if !fs.portFree(s) {
		s.local = netip.AddrPort{}
		return unix.EADDRINUSE
	}
	fs.takePort(s)
	return nil
}

// portFree reports whether s may have its local address's port.
func (fs *FileSystem) portFree(s *Socket) bool {
	for _, o := range fs.ports[s.local.Port()] {
		reuse := s.flag(unix.SOL_SOCKET, unix.SO_REUSEADDR) && o.flag(unix.SOL_SOCKET, unix.SO_REUSEADDR) && !o.listening
		if o.protocol() == s.protocol() && clash(o, s) && !reuse {
			return false
		}
	}
	return true
}

// takePort records s as bound to its port.
func (fs *FileSystem) takePort(s *Socket) {
	if fs.ports == nil {
		fs.ports = map[uint16][]*Socket{}
	}
	fs.ports[s.local.Port()] = append(fs.ports[s.local.Port()], s)
	s.fs = fs
}

// ListenInet makes a TCP socket listen (an unbound one on an ephemeral
// port of the wildcard), with a backlog as Listen's.
func (fs *FileSystem) ListenInet(s *Socket, n int) error {
	switch {
	case !s.Stream():
		return unix.EOPNOTSUPP
	case s.Connected() || s.peerGone:
		return unix.EINVAL
	case !s.bound():
		if err := fs.BindInet(s, netip.AddrPortFrom(wildcard(s.Family), 0), false); err != nil {
			return err
		}
	}
	s.listening, s.maxBacklog = true, int(min(uint32(n), SoMaxConn))
	return nil
}

// wildcard is a family's any-address.
func wildcard(fam int) netip.Addr {
	if fam == unix.AF_INET6 {
		return netip.IPv6Unspecified()
	}
	return netip.IPv4Unspecified()
}

// loopback is the loopback address a socket connecting to to gets when
// it has none: 127.0.0.1 (v4-mapped for a v4-mapped to), else ::1.
func loopback(to netip.Addr) netip.Addr {
	switch {
	case to.Is4():
		return netip.AddrFrom4([4]byte{127, 0, 0, 1})
	case to.Is4In6():
		return netip.AddrFrom16(netip.AddrFrom4([4]byte{127, 0, 0, 1}).As16())
	}
	return netip.IPv6Loopback()
}

// listener is the listening TCP socket that takes a connection to addr,
// nil if none: one bound to it, before one bound to the wildcard.
func (fs *FileSystem) listener(addr netip.AddrPort) *Socket {
	return fs.boundAt(addr, (*Socket).Listening)
}

// boundAt is the socket, of those which picks, that takes what is sent to
// addr: one bound to addr itself before one bound to the wildcard of its
// port; nil if none.
func (fs *FileSystem) boundAt(addr netip.AddrPort, which func(*Socket) bool) *Socket {
	var wild *Socket
	for _, o := range fs.ports[addr.Port()] {
		if !which(o) || !covers(o.local.Addr(), o.Family, o.v6only(), addr.Addr()) {
			continue
		}
		if !o.local.Addr().IsUnspecified() {
			return o
		}
		if wild == nil {
			wild = o
		}
	}
	return wild
}

// ConnectInet connects a TCP socket to the listening socket at addr:
// the server's end, made now, waits in its backlog. An unbound socket
// gets an ephemeral port of the loopback address. EISCONN connected
// already, EINVAL listening, ENETUNREACH for an address not the
// machine's, ECONNREFUSED where nothing listens; a full backlog blocks
// (ErrWouldBlock, and the listener's file to wait on; EAGAIN if
// nonblocking).
func (fs *FileSystem) ConnectInet(s *Socket, addr netip.AddrPort, nonblocking bool, ino uint64) (wait *OpenFile, err error) {
	to := addr.Addr()
	if to.IsUnspecified() { // Linux connects the wildcard to the loopback
		to = loopback(wildcard(s.Family))
		addr = netip.AddrPortFrom(to, addr.Port())
	}
	switch {
	case s.out != nil && s.out.conn&door.EgressBit != 0:
		return nil, fs.ConnectOut(s, addr, nonblocking) // its outcome, or EALREADY, EISCONN
	case s.Connected() || s.peerGone:
		return nil, unix.EISCONN
	case s.listening:
		return nil, unix.EINVAL
	case !Local(to) && fs.door.open && s.Stream():
		return nil, fs.ConnectOut(s, addr, nonblocking)
	case !Local(to):
		return nil, unix.ENETUNREACH
	}
	l := fs.listener(addr)
	switch {
	case l == nil:
		return nil, unix.ECONNREFUSED
	case len(l.backlog) > l.maxBacklog && nonblocking:
		return nil, unix.EAGAIN
	case len(l.backlog) > l.maxBacklog:
		return l.file, ErrWouldBlock
	}
	if !s.bound() {
		if err := fs.BindInet(s, netip.AddrPortFrom(loopback(to), 0), false); err != nil {
			return nil, unix.EADDRNOTAVAIL
		}
	}
	if err := s.budget.Charge(SocketBytes, SocketCapacity); err != nil {
		return nil, err
	}
	server := &Socket{Family: l.Family, Type: s.Type, Cred: l.Cred, ino: ino, budget: s.budget, peer: s,
		local: netip.AddrPortFrom(as(l.Family, to), addr.Port()), remote: netip.AddrPortFrom(as(l.Family, s.local.Addr()), s.local.Port())}
	s.peer, s.remote = server, addr
	s.wire, server.wire = &fs.wire, &fs.wire
	s.wire.show(PacketConnect, s.local, server.local, nil)
	l.backlog = append(l.backlog, server)
	l.queue.Notify(EventIn)
	s.queue.Notify(EventOut)
	return nil, nil
}

// atLoopback is the socket at (a listener, a UDP receiver) finds on the
// machine's port — on 127.0.0.1, else on ::1, where the door delivers —
// and the address it was found at.
func atLoopback(port uint16, at func(netip.AddrPort) *Socket) (*Socket, netip.Addr) {
	for _, a := range []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()} {
		if s := at(netip.AddrPortFrom(a, port)); s != nil {
			return s, a
		}
	}
	return nil, netip.Addr{}
}

// as is a seen by a socket of family fam: v4-mapped on an AF_INET6
// socket, plain on an AF_INET one.
func as(fam int, a netip.Addr) netip.Addr {
	if fam == unix.AF_INET6 && a.Is4() {
		return netip.AddrFrom16(a.As16())
	}
	return a.Unmap()
}

// unbindPort takes a closing internet socket's port back.
func (s *Socket) unbindPort() {
	if s.fs == nil || !s.local.IsValid() {
		return
	}
	list := s.fs.ports[s.local.Port()]
	for i, o := range list {
		if o == s {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.fs.ports, s.local.Port())
	} else {
		s.fs.ports[s.local.Port()] = list
	}
}
