package vfs

import (
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/vmm/door"
)

// Sockets (sockfs): the program's own, connected inside the machine, as
// deterministic as a pipe — run only from the kernel's scheduler, nothing
// of them an input. A socket is an endpoint: what its peer sent and it
// has not received waits in its receive buffer, bytes for a stream,
// messages (with their boundaries) for a datagram or seqpacket socket.

// SocketCapacity is what a socket's receive buffer holds: Linux's
// default socket buffer (net.core.wmem_default, 212 992 bytes), charged
// to the budget while the socket is open.
const SocketCapacity = 212992

// rights are open files sent together (SCM_RIGHTS), at offset at of a
// receive buffer.
type rights struct {
	at    int
	files []*OpenFile
}

// MaxRights is the most files one message passes (SCM_MAX_FD).
const MaxRights = 253

// msgOverhead is what each message takes of a buffer beside its bytes,
// as Linux counts a packet's truesize: a flood of empty datagrams fills
// it too.
const msgOverhead = 512

// SockType is a socket's type: SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET.
type SockType int

// Socket is one end of a conversation inside the machine.
type Socket struct {
	notTTY
	Family int // AF_UNIX
	Type   SockType
	// peer is the socket it is connected to, nil if none (or gone:
	// peerGone).
	peer     *Socket
	peerGone bool
	// buf is what the peer sent, not yet received: a stream's bytes, or
	// a message socket's messages (msgs, each a slice of buf's bytes'
	// lengths).
	buf  []byte
	msgs []int
	// senders are who sent each message, for a socket that receives by
	// address (socket_dgram.go); dest is where an AF_UNIX datagram
	// socket connected to; err is an error a connected UDP socket has yet
	// to report; closed is a released socket's.
	senders []Sender
	dest    *Socket
	err     unix.Errno
	closed  bool
	// inFlight are open files sent with SCM_RIGHTS and not yet received,
	// each batch with the offset in buf of the first byte sent with it;
	// each file holds a reference while in flight.
	inFlight []rights
	// shutRead and shutWrite are its own shutdowns; the peer's write
	// shutdown is its end of file.
	shutRead, shutWrite bool
	eof                 bool
	// Cred is who made it (SO_PEERCRED tells the peer): pid, uid, gid.
	Cred [3]uint32
	// options are the options setsockopt set, by optKey.
	options map[int]int32
	// name is its address once bound: a path, or "\x00" and an abstract
	// name; node is a path's socket file.
	name string
	node *Node
	// A listening socket's backlog is its connections not yet accepted:
	// the server ends, each connected to its client.
	listening  bool
	backlog    []*Socket
	maxBacklog int
	fs         *FileSystem // whose namespace (abstract names, ports) holds its name
	// An internet socket's addresses, its own and its peer's (the zero
	// AddrPort: none); reset is a connection its peer closed with bytes
	// unread (an RST): its next receive is ECONNRESET.
	local, remote netip.AddrPort
	reset         bool
	// Timeouts are SO_RCVTIMEO's and SO_SNDTIMEO's (0: none).
	Timeouts [2]time.Duration
	ino      uint64
	queue    Queue
	budget   *Budget
	file     *OpenFile // the open file it is: a socket is in one
	// out is a connection through the door: its peer is a host client;
	// wire, a connection inside the machine's, is who sees its packets.
	out  *outside
	wire *wireTap
}

// NewSocket makes an unconnected socket of family and type, opened with
// flags' O_NONBLOCK, made by cred and numbered ino; it charges its
// buffer's capacity (ENOBUFS past the budget).
func NewSocket(b *Budget, family int, typ SockType, flags uint64, cred [3]uint32, ino uint64) (*OpenFile, error) {
	if err := b.Charge(SocketBytes, SocketCapacity); err != nil {
		return nil, err
	}
	s := &Socket{Family: family, Type: typ, Cred: cred, ino: ino, budget: b}
	s.file = NewOpenFile(s, "", unix.O_RDWR|flags&unix.O_NONBLOCK)
	return s.file, nil
}

// NewSocketPair makes two sockets of family and type connected to each
// other (socketpair), opened with flags' O_NONBLOCK, made by cred; ino
// and ino+1 number them. Each charges its buffer's capacity (ENOBUFS
// past the budget).
func NewSocketPair(b *Budget, family int, typ SockType, flags uint64, cred [3]uint32, ino uint64) (a, c *OpenFile, err error) {
	if err := b.Charge(SocketBytes, 2*SocketCapacity); err != nil {
		return nil, nil, err
	}
	x := &Socket{Family: family, Type: typ, Cred: cred, ino: ino, budget: b}
	y := &Socket{Family: family, Type: typ, Cred: cred, ino: ino + 1, budget: b}
	x.peer, y.peer = y, x
	nonblock := flags & unix.O_NONBLOCK
	x.file, y.file = NewOpenFile(x, "", unix.O_RDWR|nonblock), NewOpenFile(y, "", unix.O_RDWR|nonblock)
	return x.file, y.file, nil
}

// SocketOf is the socket f is, or nil.
func SocketOf(f *OpenFile) *Socket {
	s, _ := f.impl.(*Socket)
	return s
}

// Ino is the socket's inode number (stat, /proc/self/fd's "socket:[N]").
func (s *Socket) Ino() uint64 { return s.ino }

// File is the open file the socket is, nil for a connection not yet
// accepted.
func (s *Socket) File() *OpenFile { return s.file }

// Peer is the socket it is connected to, nil if none (or outside).
func (s *Socket) Peer() *Socket { return s.peer }

// Connected reports whether the socket has a peer, inside the machine or
// through the door.
func (s *Socket) Connected() bool { return s.peer != nil || s.out != nil }

// Stream reports whether the socket carries bytes, not messages.
func (s *Socket) Stream() bool { return s.Type == unix.SOCK_STREAM }

// Recv takes what the peer sent into b: up to len(b) bytes of a stream,
// or the next message (cut to len(b); n is its whole length, which
// MSG_TRUNC asks for) — peeking leaves it. An empty buffer is end of file
// once the peer shut its writing or went, else it blocks (EAGAIN if
// nonblocking).
func (s *Socket) Recv(b []byte, peek, nonblocking bool) (got, n int, err error) {
	got, n, _, err = s.RecvRights(b, peek, nonblocking)
	return got, n, err
}

// RecvRights is Recv that also takes the files sent with what it
// receives (SCM_RIGHTS): a stream's receive stops before bytes sent with
// files once it has some, as Linux's does, so the files come with the
// receive that takes their first byte. The files' in-flight references
// become the caller's.
func (s *Socket) RecvRights(b []byte, peek, nonblocking bool) (got, n int, files []*OpenFile, err error) {
	got, n, files, _, err = s.RecvFrom(b, peek, nonblocking)
	return got, n, files, err
}

// RecvFrom is RecvRights that also says who sent a message received by
// address (the zero Sender otherwise).
func (s *Socket) RecvFrom(b []byte, peek, nonblocking bool) (got, n int, files []*OpenFile, from Sender, err error) {
	if s.listening {
		return 0, 0, nil, from, unix.EINVAL
	}
	if err := s.takeError(); err != nil {
		return 0, 0, nil, from, err
	}
	if s.reset {
		s.reset = false
		return 0, 0, nil, from, unix.ECONNRESET
	}
	if len(s.buf) == 0 && len(s.msgs) == 0 {
		switch {
		case s.eof || s.shutRead || s.peerGone:
			return 0, 0, nil, from, nil
		case !s.Connected() && s.Stream():
			return 0, 0, nil, from, unix.ENOTCONN
		case nonblocking:
			return 0, 0, nil, from, unix.EAGAIN
		}
		return 0, 0, nil, from, ErrWouldBlock
	}
	avail := len(s.buf)
	if s.Stream() {
		// Up to the next bytes sent with files, if these are not those.
		for _, r := range s.inFlight {
			if r.at > 0 {
				avail = r.at
				break
			}
		}
		got = copy(b, s.buf[:avail])
		n = got
	} else {
		n = s.msgs[0]
		got = copy(b, s.buf[:n])
		if len(s.senders) > 0 {
			from = s.senders[0]
		}
	}
	if len(s.inFlight) > 0 && s.inFlight[0].at == 0 && !peek {
		files = s.inFlight[0].files
		s.inFlight = s.inFlight[1:]
	}
	if !peek {
		used := got
		if !s.Stream() {
			used = n
			s.msgs = s.msgs[1:]
			if len(s.senders) > 0 {
				s.senders = s.senders[1:]
			}
		}
		s.buf = s.buf[used:]
		for i := range s.inFlight {
			s.inFlight[i].at -= used
		}
		if len(s.buf) == 0 {
			s.buf = nil // a drained buffer gives its array back
		}
		if s.peer != nil {
			s.peer.queue.Notify(EventOut)
		}
		if s.out != nil {
			s.out.took(used)
		}
	}
	return got, n, files, from, nil
}

// Send gives b to the peer: as much of a stream as its buffer has room
// for, or one message whole (EMSGSIZE if it can never fit). A full
// buffer blocks (EAGAIN if nonblocking); a peer gone or shut for reading,
// or a socket shut for writing, is ErrNoReaders (EPIPE, SIGPIPE unless
// MSG_NOSIGNAL).
func (s *Socket) Send(b []byte, nonblocking bool) (int, error) {
	return s.SendRights(b, nil, nonblocking)
}

// SendRights is Send with files passed along (SCM_RIGHTS): they go with
// the first byte sent, each holding a reference until received (or
// until the receiving socket closes).
func (s *Socket) SendRights(b []byte, files []*OpenFile, nonblocking bool) (int, error) {
	if s.out != nil {
		return s.sendOut(b, nonblocking) // TCP passes no files
	}
	if !s.Stream() && s.peer == nil && !s.peerGone && s.Type == unix.SOCK_DGRAM {
		switch {
		case s.remote.IsValid():
			return s.fs.SendTo(s, b, nil, s.remote, nonblocking)
		case s.dest != nil:
			return s.fs.SendTo(s, b, s.dest, netip.AddrPort{}, nonblocking)
		}
		return 0, unix.EDESTADDRREQ
	}
	p := s.peer
	switch {
	case s.shutWrite || s.peerGone:
		return 0, ErrNoReaders
	case p == nil && s.Stream():
		return 0, unix.ENOTCONN
	case p == nil:
		return 0, unix.ENOTCONN // an unconnected datagram socket has no one to send to
	case p.shutRead && s.Stream():
		return 0, ErrNoReaders
	case !s.Stream() && len(b)+msgOverhead > SocketCapacity:
		return 0, unix.EMSGSIZE
	}
	room := p.room()
	if room <= 0 || !s.Stream() && room < len(b)+msgOverhead {
		if nonblocking {
			return 0, unix.EAGAIN
		}
		return 0, ErrWouldBlock
	}
	n := min(len(b), room)
	if len(files) > 0 && (n > 0 || !s.Stream()) { // files go with a byte of a stream, as Linux's
		for _, f := range files {
			f.Refs++
		}
		p.inFlight = append(p.inFlight, rights{at: len(p.buf), files: files})
	}
	p.buf = append(p.buf, b[:n]...)
	if !s.Stream() {
		p.msgs = append(p.msgs, n)
	} else if n > 0 {
		s.wire.show(PacketData, s.local, s.remote, b[:n])
	}
	p.queue.Notify(EventIn)
	return n, nil
}

// room is what its buffer can take still.
func (s *Socket) room() int { return SocketCapacity - len(s.buf) - msgOverhead*len(s.msgs) }

// Shutdown shuts the socket for reading, writing or both (SHUT_RD,
// SHUT_WR, SHUT_RDWR): a write shutdown is the peer's end of file.
func (s *Socket) Shutdown(how int) error {
	if !s.Connected() && !s.peerGone {
		return unix.ENOTCONN
	}
	if how == unix.SHUT_RD || how == unix.SHUT_RDWR {
		s.shutRead = true
	}
	if how == unix.SHUT_WR || how == unix.SHUT_RDWR {
		if s.out != nil && !s.shutWrite && !s.peerGone {
			s.out.door.send(door.Msg{Op: door.Fin, Conn: s.out.conn})
		}
		s.showEnd(false)
		s.shutWrite = true
		if s.peer != nil {
			s.peer.eof = true
			s.peer.queue.Notify(AllEvents)
		}
	}
	s.queue.Notify(AllEvents)
	return nil
}

// Read is recv with no flags.
func (s *Socket) Read(f *OpenFile, b []byte, _ int64) (int, error) {
	got, _, err := s.Recv(b, false, f.nonblocking())
	return got, err
}

// Write is send with no flags.
func (s *Socket) Write(f *OpenFile, b []byte, _ int64) (int, error) {
	if len(b) == 0 && s.Stream() {
		return 0, nil
	}
	return s.Send(b, f.nonblocking())
}

func (*Socket) Seek(*OpenFile, int64, uint64) (uint64, error) { return 0, unix.ESPIPE }

// Readiness: readable with something to receive or at end of file;
// writable with room in the peer's buffer; hung up when neither way is
// open any more (the peer gone, or both shut).
func (s *Socket) Readiness() Events {
	if s.reset {
		return EventIn | EventErr | EventHup
	}
	if s.listening {
		if len(s.backlog) > 0 {
			return EventIn
		}
		return 0
	}
	var r Events
	if len(s.buf) > 0 || s.eof || s.shutRead || s.peerGone {
		r |= EventIn
	}
	if p := s.peer; p != nil && !s.shutWrite && p.room() > msgOverhead {
		r |= EventOut
	}
	if s.out != nil && !s.out.connecting && !s.shutWrite && !s.peerGone && s.out.unacked < door.Room {
		r |= EventOut
	}
	if s.out != nil && s.err != 0 {
		r |= EventOut | EventHup // a refused connect: writable, and its error
	}
	if s.Type == unix.SOCK_DGRAM && s.peer == nil && !s.peerGone && !s.shutWrite &&
		(s.dest == nil || !s.dest.closed && s.dest.room() > msgOverhead) {
		r |= EventOut // by address: UDP never waits, AF_UNIX for its receiver's room
	}
	if s.err != 0 {
		r |= EventErr
	}
	if s.peerGone || s.shutWrite && (s.eof || s.shutRead) {
		r |= EventHup
	}
	return r
}

// Queue is the socket's own: its receivers, and its senders waiting for
// room in the peer's buffer, are woken through it.
func (s *Socket) Queue() *Queue { return &s.queue }

// Release closes the socket: its peer sees end of file (a stream) and
// EPIPE on sending; its buffer's capacity goes back.
func (s *Socket) Release() {
	if p := s.peer; p != nil {
		p.peer, p.peerGone, p.eof = nil, true, true
		// TCP resets a connection closed with bytes unread, or with
		// SO_LINGER of no time.
		on, secs := s.Linger()
		p.reset = s.inet() && (len(s.buf) > 0 || on && secs == 0)
		s.showEnd(p.reset)
		p.queue.Notify(AllEvents)
	} else if s.peerGone {
		s.showEnd(false) // the end closed second
	}
	if s.out != nil {
		s.closeOut()
	}
	for _, c := range s.backlog { // connections never accepted: their clients see them go
		c.Release()
	}
	for _, r := range s.inFlight { // files sent it and never received
		DropRefs(r.files)
	}
	s.unbind()
	s.closed = true
	s.peer, s.buf, s.msgs, s.backlog, s.inFlight, s.senders, s.dest = nil, nil, nil, nil, nil, nil, nil
	s.budget.Release(SocketBytes, SocketCapacity)
}

func (*Socket) Node() *Node                    { return nil }
func (s *Socket) save(sv *Saver, f *SavedFile) { f.Socket = sv.socket(s) }
