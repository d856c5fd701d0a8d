package vfs

import (
	"fmt"
	"maps"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/vmm/door"
)

// SavedSocket is a socket: its buffer (a message socket's messages as
// their lengths), shutdowns, name, and the sockets it is tied to as
// indices into the saved sockets — its peer (-1 for none) and, listening,
// its backlog.
type SavedSocket struct {
	Family, Type        int
	Peer                int
	PeerGone            bool
	Buf                 []byte
	Msgs                []int
	ShutRead, ShutWrite bool
	EOF                 bool
	Cred                [3]uint32
	Ino                 uint64
	Options             map[int]int32
	Name                string
	Bound               bool // it holds Name (an accepted socket shares its listener's)
	Listening           bool
	MaxBacklog          int
	Backlog             []int
	// An internet socket's addresses (netip.AddrPort's text, "" for
	// none), and a reset not yet received.
	Local, Remote string
	Reset         bool
	// InFlight are the files sent it and not yet received (indices into
	// the open files), each batch at an offset of Buf.
	InFlight []SavedRights
	Timeouts [2]time.Duration
	// Door is a connection through the door, nil for none.
	Door *SavedDoorConn
	// Senders are who sent each message received by address (one a
	// message, or none); Dest is the socket an AF_UNIX datagram socket
	// connected to (nil: none), Closed a socket released but still a
	// destination, Err an error yet to report.
	Senders []Sender
	Dest    *int
	Closed  bool
	Err     int
}

// SavedDoorConn is a door connection's state on its socket.
type SavedDoorConn struct {
	Conn                uint32
	Sent                uint64
	Unacked, Taken      int
	Connecting, Waiting bool
}

// SavedRights are files passed together, at an offset of a buffer.
type SavedRights struct {
	At    int
	Files []int
}

// socket numbers s, and the sockets it is tied to.
func (sv *Saver) socket(s *Socket) int {
	if i, ok := sv.sockets[s]; ok {
		return i
	}
	i := len(sv.Sockets)
	sv.sockets[s] = i
	sv.Sockets = append(sv.Sockets, SavedSocket{})
	ss := SavedSocket{Family: s.Family, Type: int(s.Type), Peer: -1, PeerGone: s.peerGone, Buf: s.buf, Msgs: s.msgs,
		ShutRead: s.shutRead, ShutWrite: s.shutWrite, EOF: s.eof, Cred: s.Cred, Ino: s.ino, Options: maps.Clone(s.options),
		Name: s.name, Bound: s.node != nil || s.fs != nil, Listening: s.listening, MaxBacklog: s.maxBacklog,
		Local: addrText(s.local), Remote: addrText(s.remote), Reset: s.reset, Timeouts: s.Timeouts,
		Senders: s.senders, Closed: s.closed, Err: int(s.err)}
	if s.dest != nil {
		d := sv.socket(s.dest)
		ss.Dest = &d
	}
	if s.peer != nil {
		ss.Peer = sv.socket(s.peer)
	}
	if o := s.out; o != nil {
		ss.Door = &SavedDoorConn{Conn: o.conn, Sent: o.sent, Unacked: o.unacked, Taken: o.taken, Connecting: o.connecting, Waiting: o.waiting}
	}
	for _, c := range s.backlog {
		ss.Backlog = append(ss.Backlog, sv.socket(c))
	}
	for _, r := range s.inFlight {
		sr := SavedRights{At: r.at}
		for _, f := range r.files {
			sr.Files = append(sr.Files, sv.File(f))
		}
		ss.InFlight = append(ss.InFlight, sr)
	}
	sv.Sockets[i] = ss
	return i
}

// checkSockets refuses a socket of a family or type there is not, a
// buffer past its capacity or whose messages are not its bytes, a peer
// that is not connected back, a backlog of a socket that does not listen
// or longer than it may be, or a socket in two backlogs.
func checkSockets(sockets []SavedSocket) error {
	queued, abstract, conns := map[int]bool{}, map[string]bool{}, map[uint32]bool{}
	for i, s := range sockets {
		if d := s.Door; d != nil {
			if conns[d.Conn] {
				return fmt.Errorf("socket %d: door connection %d twice", i, d.Conn)
			}
			conns[d.Conn] = true
		}
		if err := s.check(i, sockets); err != nil {
			return fmt.Errorf("socket %d: %w", i, err)
		}
		if s.Bound && s.Family == unix.AF_UNIX && s.Name[0] == 0 {
			if abstract[s.Name] {
				return fmt.Errorf("socket %d: the abstract name %q twice", i, s.Name[1:])
			}
			abstract[s.Name] = true
		}
		for _, c := range s.Backlog {
			if c < 0 || c >= len(sockets) || c == i || queued[c] || sockets[c].Listening {
				return fmt.Errorf("socket %d: backlog socket %d", i, c)
			}
			queued[c] = true
		}
	}
	return nil
}

func (s *SavedSocket) check(i int, sockets []SavedSocket) error {
	msgBytes := 0
	for _, n := range s.Msgs {
		if n < 0 {
			return fmt.Errorf("a message of %d bytes", n)
		}
		msgBytes += n
	}
	switch {
	case s.Family != unix.AF_UNIX && s.Family != unix.AF_INET && s.Family != unix.AF_INET6:
		return fmt.Errorf("family %d", s.Family)
	case s.Type != unix.SOCK_STREAM && s.Type != unix.SOCK_DGRAM && s.Type != unix.SOCK_SEQPACKET,
		s.Family != unix.AF_UNIX && s.Type != unix.SOCK_STREAM:
		return fmt.Errorf("type %d", s.Type)
	case s.Family == unix.AF_UNIX && (s.Local != "" || s.Remote != "" || s.Reset):
		return fmt.Errorf("an AF_UNIX socket with internet addresses")
	case len(s.Buf)+msgOverhead*len(s.Msgs) > SocketCapacity:
		return fmt.Errorf("%d bytes and %d messages buffered", len(s.Buf), len(s.Msgs))
	case s.Type == unix.SOCK_STREAM && len(s.Msgs) > 0, s.Type != unix.SOCK_STREAM && msgBytes != len(s.Buf):
		return fmt.Errorf("messages of %d bytes in %d buffered", msgBytes, len(s.Buf))
	case s.Peer < -1 || s.Peer >= len(sockets) || s.Peer == i:
		return fmt.Errorf("peer %d", s.Peer)
	case s.Peer >= 0 && s.PeerGone:
		return fmt.Errorf("a peer, and gone")
	case s.Timeouts[0] < 0 || s.Timeouts[1] < 0:
		return fmt.Errorf("timeouts %v", s.Timeouts)
	case len(s.Name) > maxSocketName:
		return fmt.Errorf("a name of %d bytes", len(s.Name))
	case s.MaxBacklog < 0 || s.MaxBacklog > SoMaxConn || len(s.Backlog) > s.MaxBacklog+1 || !s.Listening && len(s.Backlog) > 0:
		return fmt.Errorf("a backlog of %d, at most %d", len(s.Backlog), s.MaxBacklog)
	case s.Listening && (s.Peer >= 0 || !s.Bound), s.Bound && s.Name == "" && s.Family == unix.AF_UNIX:
		return fmt.Errorf("listening, connected or unbound")
	case len(s.Senders) != 0 && len(s.Senders) != len(s.Msgs):
		return fmt.Errorf("%d senders of %d messages", len(s.Senders), len(s.Msgs))
	case s.Dest != nil && (*s.Dest < 0 || *s.Dest >= len(sockets) || *s.Dest == i || s.Type != unix.SOCK_DGRAM || s.Family != unix.AF_UNIX || sockets[*s.Dest].Type != s.Type):
		return fmt.Errorf("destination %d", *s.Dest)
	case s.Err != 0 && s.Err != int(unix.ECONNREFUSED):
		return fmt.Errorf("error %d", s.Err)
	case s.Door != nil && (s.Peer >= 0 || s.Listening || s.Family == unix.AF_UNIX || s.Type != unix.SOCK_STREAM):
		return fmt.Errorf("a door connection that is not a TCP stream's")
	case s.Door != nil && (s.Door.Unacked < 0 || s.Door.Unacked > door.Room || uint64(s.Door.Unacked) > s.Door.Sent ||
		s.Door.Taken < 0 || len(s.Buf)+s.Door.Taken > door.Room):
		return fmt.Errorf("door connection %d with %d bytes unacknowledged of %d, %d taken", s.Door.Conn, s.Door.Unacked, s.Door.Sent, s.Door.Taken)
	}
	for k := range s.Options {
		if _, ok := settable[k]; !ok && k != lingerKey {
			return fmt.Errorf("option %#x", k)
		}
	}
	for _, a := range []string{s.Local, s.Remote} {
		if _, err := parseAddr(a); err != nil {
			return fmt.Errorf("address %q", a)
		}
	}
	if local, _ := parseAddr(s.Local); s.Family != unix.AF_UNIX && s.Bound && (!local.IsValid() || !Local(local.Addr())) {
		return fmt.Errorf("bound to %q", s.Local)
	}
	at := -1
	for _, r := range s.InFlight {
		if r.At < at || r.At > len(s.Buf) || len(r.Files) == 0 || len(r.Files) > MaxRights {
			return fmt.Errorf("%d files in flight at %d of %d bytes", len(r.Files), r.At, len(s.Buf))
		}
		at = r.At
	}
	if s.Peer >= 0 {
		p := sockets[s.Peer]
		if p.Peer != i || (p.Family == unix.AF_UNIX) != (s.Family == unix.AF_UNIX) || p.Type != s.Type {
			return fmt.Errorf("peer %d is not a socket connected back to it", s.Peer)
		}
	}
	return nil
}

// addrText is an internet address as a checkpoint keeps it, "" for none.
func addrText(a netip.AddrPort) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// parseAddr reads addrText's text.
func parseAddr(s string) (netip.AddrPort, error) {
	if s == "" {
		return netip.AddrPort{}, nil
	}
	return netip.ParseAddrPort(s)
}

// maxSocketName is the longest name a socket has: sockaddr_un's path.
const maxSocketName = 108

// restoreSockets makes the saved sockets, tied to each other, their names
// bound again in fs's abstract namespace.
func restoreSockets(fs *FileSystem, saved []SavedSocket) []*Socket {
	out := make([]*Socket, len(saved))
	for i, s := range saved {
		local, _ := parseAddr(s.Local)
		remote, _ := parseAddr(s.Remote)
		out[i] = &Socket{local: local, remote: remote, reset: s.Reset, Timeouts: s.Timeouts, Family: s.Family, Type: SockType(s.Type), peerGone: s.PeerGone, buf: s.Buf, msgs: s.Msgs,
			shutRead: s.ShutRead, shutWrite: s.ShutWrite, eof: s.EOF, Cred: s.Cred, ino: s.Ino, options: maps.Clone(s.Options),
			name: s.Name, listening: s.Listening, maxBacklog: s.MaxBacklog, budget: fs.budget,
			senders: s.Senders, closed: s.Closed, err: unix.Errno(s.Err)}
	}
	for i, s := range saved {
		if s.Peer >= 0 {
			out[i].peer = out[s.Peer]
		}
		if s.Dest != nil {
			out[i].dest = out[*s.Dest]
		}
		if d := s.Door; d != nil {
			out[i].out = &outside{door: &fs.door, conn: d.Conn, sent: d.Sent, unacked: d.Unacked, taken: d.Taken, connecting: d.Connecting, waiting: d.Waiting}
			if !s.PeerGone {
				if fs.door.conns == nil {
					fs.door.conns = map[uint32]*Socket{}
				}
				fs.door.conns[d.Conn] = out[i]
			}
		}
		for _, c := range s.Backlog {
			out[i].backlog = append(out[i].backlog, out[c])
		}
		if s.Family != unix.AF_UNIX && s.Door == nil && (s.Peer >= 0 || s.PeerGone) {
			out[i].wire = &fs.wire
		}
		if s.Bound && s.Family != unix.AF_UNIX {
			fs.takePort(out[i])
		}
		if name := s.Name; s.Bound && len(name) > 0 && name[0] == 0 {
			if fs.abstract == nil {
				fs.abstract = map[string]*Socket{}
			}
			fs.abstract[name[1:]], out[i].fs = out[i], fs
		}
	}
	return out
}
