package vfs

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/vmm/door"
)

// The door: connections host clients make to the machine's published
// ports (vmm/door). Such a connection's guest end is a Socket whose peer
// is outside: what the program sends leaves as door messages (the
// outbox, which the kernel hands to the machine after each call), what
// the client sends arrives as messages the kernel delivers at the
// position they were logged. Each way is a window of door.Room bytes,
// given back by messages: the program's receive buffer never holds more
// than its capacity, and its sends wait for the host's acknowledgements
// as they would for a peer's buffer.

// doorSide is the guest side of the machine's published ports and egress.
type doorSide struct {
	// open says the machine has a door: a connection to a host address
	// goes through it (the host allows or refuses it) rather than being
	// unreachable.
	open   bool
	conns  map[uint32]*Socket
	outbox []door.Msg
}

// outside is a door connection's state on its socket.
type outside struct {
	door *doorSide
	conn uint32
	sent uint64 // bytes sent so far: the offset of the next
	// unacked are bytes sent the host has not acknowledged writing;
	// taken are bytes received the host has not been given room for.
	unacked, taken int
	// connecting: the program's connect awaits the host's answer;
	// waiting: a blocking connect waits for it, to return it.
	connecting, waiting bool
}

// SetDoor says whether the machine has a door: whether a connection to
// a host address goes through it.
func (fs *FileSystem) SetDoor(open bool) { fs.door.open = open }

// ConnectOut connects a TCP socket to a host address through the door: a
// Connect goes out, and the connection waits for the host's answer — a
// blocking connect (ErrWouldBlock) returns it, a nonblocking one is
// EINPROGRESS and learns it by poll and SO_ERROR, as Linux's. Called
// again: EALREADY while it waits, then its outcome once (a blocking
// connect's), EISCONN after.
func (fs *FileSystem) ConnectOut(s *Socket, addr netip.AddrPort, nonblocking bool) error {
	if o := s.out; o != nil {
		switch {
		case o.connecting && nonblocking:
			return unix.EALREADY
		case o.connecting:
			o.waiting = true
			return ErrWouldBlock
		case o.waiting:
			o.waiting = false
			return s.takeError()
		}
		return unix.EISCONN
	}
	if s.peerGone {
		return unix.EISCONN
	}
	if !s.bound() {
		if err := fs.BindInet(s, netip.AddrPortFrom(wildcard(s.Family), 0), false); err != nil {
			return err
		}
	}
	id := door.EgressBit | uint32(s.ino)
	if fs.door.conns[id] != nil {
		return unix.EADDRNOTAVAIL
	}
	s.out = &outside{door: &fs.door, conn: id, connecting: true, waiting: !nonblocking}
	s.local, s.remote = netip.AddrPortFrom(as(s.Family, door.GuestAddr), s.local.Port()), addr
	if fs.door.conns == nil {
		fs.door.conns = map[uint32]*Socket{}
	}
	fs.door.conns[id] = s
	fs.door.send(door.Msg{Op: door.Connect, Conn: id, Port: s.local.Port(), Peer: netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())})
	if nonblocking {
		return unix.EINPROGRESS
	}
	return ErrWouldBlock
}

// Connecting reports whether the socket waits for the host to answer its
// connect.
func (s *Socket) Connecting() bool { return s.out != nil && s.out.connecting }

// windowStep is how much room a receiver gathers before giving it back:
// a message per quarter window, not per receive.
const windowStep = door.Room / 4

// TakeOutbox returns the messages the program's sockets sent through the
// door since the last call, in order.
func (fs *FileSystem) TakeOutbox() []door.Msg {
	out := fs.door.outbox
	fs.door.outbox = nil
	return out
}

// HasOutbox reports whether the program's sockets sent through the door
// since the last TakeOutbox.
func (fs *FileSystem) HasOutbox() bool { return len(fs.door.outbox) > 0 }

func (d *doorSide) send(m door.Msg) { d.outbox = append(d.outbox, m) }

// Arrive is an Open message: a host client connected to the program's
// port. The connection waits in the backlog of the socket listening there
// (on 127.0.0.1, or ::1), its own address that one, its peer's peer; with
// none listening, a full backlog or no budget it is refused (a Reset goes
// back), as a SYN to a closed port is.
func (fs *FileSystem) Arrive(m door.Msg, ino uint64) error {
	if fs.door.conns[m.Conn] != nil {
		return fmt.Errorf("door %v: the connection is open already", m)
	}
	l, to := atLoopback(m.Port, fs.listener)
	if l == nil || len(l.backlog) > l.maxBacklog || l.budget.Charge(SocketBytes, SocketCapacity) != nil {
		fs.door.send(door.Msg{Op: door.Reset, Conn: m.Conn})
		return nil
	}
	s := &Socket{Family: l.Family, Type: unix.SOCK_STREAM, Cred: [3]uint32{0, ^uint32(0), ^uint32(0)}, ino: ino, budget: l.budget,
		local: netip.AddrPortFrom(as(l.Family, to), m.Port), remote: netip.AddrPortFrom(as(l.Family, m.Peer.Addr()), m.Peer.Port()),
		out: &outside{door: &fs.door, conn: m.Conn}}
	if fs.door.conns == nil {
		fs.door.conns = map[uint32]*Socket{}
	}
	fs.door.conns[m.Conn] = s
	l.backlog = append(l.backlog, s)
	l.queue.Notify(EventIn)
	return nil
}

// Deliver applies a message from a host client to its connection's
// socket; one for a connection the program has closed is dropped. A
// message the host side could not have sent (more bytes than the window,
// an acknowledgement of bytes never sent) is an error: it came from a
// damaged tape.
func (fs *FileSystem) Deliver(m door.Msg) error {
	if m.Op == door.Datagram {
		fs.arriveDatagram(m)
		return nil
	}
	s := fs.door.conns[m.Conn]
	if s == nil {
		return nil
	}
	o := s.out
	if o.connecting && m.Op != door.Connected && m.Op != door.Reset {
		return fmt.Errorf("door %v: the connection is not made yet", m)
	}
	switch m.Op {
	case door.Connected:
		if !o.connecting {
			return fmt.Errorf("door %v: the connection is made already", m)
		}
		o.connecting = false
		s.queue.Notify(AllEvents)
	case door.Data:
		if len(s.buf)+o.taken+len(m.Data) > door.Room {
			return fmt.Errorf("door %v: past the connection's window (%d bytes buffered)", m, len(s.buf))
		}
		s.buf = append(s.buf, m.Data...)
		s.queue.Notify(EventIn)
	case door.Fin:
		s.eof = true
		s.queue.Notify(AllEvents)
	case door.Reset:
		if o.connecting { // refused
			o.connecting, s.err = false, unix.ECONNREFUSED
		} else {
			s.reset = true
		}
		s.peerGone, s.eof = true, true
		s.forgetDoor()
		s.queue.Notify(AllEvents)
	case door.Ack:
		if int(m.N) > o.unacked {
			return fmt.Errorf("door %v: only %d bytes are unacknowledged", m, o.unacked)
		}
		o.unacked -= int(m.N)
		s.queue.Notify(EventOut)
	default:
		return fmt.Errorf("door %v: not a message from the host", m)
	}
	return nil
}

// sendOut sends b to the host client, as much as the window has room for
// (a stream's send to a peer's buffer).
func (s *Socket) sendOut(b []byte, nonblocking bool) (int, error) {
	o := s.out
	room := door.Room - o.unacked
	switch {
	case s.shutWrite || s.peerGone:
		return 0, ErrNoReaders
	case o.connecting && nonblocking:
		return 0, unix.EAGAIN
	case o.connecting:
		return 0, ErrWouldBlock
	case room <= 0 && nonblocking:
		return 0, unix.EAGAIN
	case room <= 0:
		return 0, ErrWouldBlock
	}
	n := min(len(b), room)
	for rest := b[:n]; len(rest) > 0; {
		k := min(len(rest), door.MaxData)
		o.door.send(door.Msg{Op: door.Data, Conn: o.conn, Offset: o.sent, Data: append([]byte(nil), rest[:k]...)})
		o.sent += uint64(k)
		rest = rest[k:]
	}
	o.unacked += n
	return n, nil
}

// took gives the host room back for bytes received, a step at a time.
func (o *outside) took(n int) {
	if o.taken += n; o.taken >= windowStep {
		o.door.send(door.Msg{Op: door.Window, Conn: o.conn, N: uint32(o.taken)})
		o.taken = 0
	}
}

// closeOut tells the host the program closed the socket: a reset when
// bytes were left unread or it lingers no time, as TCP's close.
func (s *Socket) closeOut() {
	op := door.Close
	if on, secs := s.Linger(); len(s.buf) > 0 || on && secs == 0 {
		op = door.Reset
	}
	if !s.peerGone {
		s.out.door.send(door.Msg{Op: op, Conn: s.out.conn})
	}
	s.forgetDoor()
}

// forgetDoor takes the connection out of the door's table: later
// messages for it are dropped.
func (s *Socket) forgetDoor() {
	if d := s.out.door; d.conns[s.out.conn] == s {
		delete(d.conns, s.out.conn)
	}
}
