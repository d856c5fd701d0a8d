package vfs

import "golang.org/x/sys/unix"

// AF_UNIX's names and connections: a socket bound to a path is a socket
// file in the tree (which stays when the socket closes, as Linux leaves
// it, refusing connections); one bound to an abstract name is in the file
// system's abstract namespace until it closes. A stream or seqpacket
// socket listens; a connect to it makes the server's end of the
// connection, which waits in its backlog until accepted.

// SoMaxConn is the longest backlog (net.core.somaxconn).
const SoMaxConn = 4096

// Name is the socket's address: a path, "\x00" and an abstract name, or
// "" if unbound.
func (s *Socket) Name() string { return s.name }

// Listening reports whether the socket listens.
func (s *Socket) Listening() bool { return s.listening }

// BindPath binds s to a new socket file at e, its permission bits mode:
// EADDRINUSE where e names a file already, EINVAL for a socket bound
// already.
func (fs *FileSystem) BindPath(s *Socket, e Entry, path string, mode uint32) error {
	// The file first, as Linux's unix_bind_bsd makes it before it looks
	// at the socket.
	if err := fs.vacant(e); err != nil {
		if err == unix.EEXIST {
			return unix.EADDRINUSE
		}
		return err
	}
	if err := fs.mayCreate(e.Dir); err != nil {
		return err
	}
	if s.name != "" {
		return unix.EINVAL
	}
	n, err := fs.NewNode(false, mode)
	if err != nil {
		return err
	}
	n.other, n.sock = unix.S_IFSOCK, s
	n.Written = true
	fs.link(e.Dir, e.Name, n)
	fs.Modified(e.Dir)
	s.name, s.node = path, n
	return nil
}

// BindAbstract binds s to an abstract name (without its leading NUL):
// EADDRINUSE if a socket has it, EINVAL for a socket bound already.
func (fs *FileSystem) BindAbstract(s *Socket, name string) error {
	switch {
	case s.name != "":
		return unix.EINVAL
	case fs.abstract[name] != nil:
		return unix.EADDRINUSE
	}
	if fs.abstract == nil {
		fs.abstract = map[string]*Socket{}
	}
	fs.abstract[name] = s
	s.name, s.fs = "\x00"+name, fs
	return nil
}

// Abstract is the socket bound to an abstract name, nil if none.
func (fs *FileSystem) Abstract(name string) *Socket { return fs.abstract[name] }

// Bound is the socket a socket file n is bound to, nil if it is none or
// its socket closed.
func (n *Node) Bound() *Socket { return n.sock }

// Listen makes a bound stream or seqpacket socket listen with a backlog
// of n (as unsigned, at most SoMaxConn; again, a new length): EOPNOTSUPP for a
// datagram socket, EINVAL for one unbound or connected.
func (s *Socket) Listen(n int) error {
	switch {
	case s.Type == unix.SOCK_DGRAM:
		return unix.EOPNOTSUPP
	case s.name == "" || s.peer != nil || s.peerGone:
		return unix.EINVAL
	}
	s.listening, s.maxBacklog = true, int(min(uint32(n), SoMaxConn)) // a negative backlog is a large one
	return nil
}

// Connect connects s to the listening socket l: the server's end waits in
// l's backlog, made by cred (what SO_PEERCRED tells s is l's maker's).
// EISCONN for s connected already, EINVAL for a listening s,
// ECONNREFUSED for an l that does not listen, EPROTOTYPE for another
// type; a full backlog blocks (EAGAIN if nonblocking).
func (s *Socket) Connect(l *Socket, nonblocking bool, ino uint64) error {
	switch {
	case s.peer != nil || s.peerGone:
		return unix.EISCONN
	case s.listening:
		return unix.EINVAL
	case l == nil || !l.listening:
		return unix.ECONNREFUSED
	case l.Type != s.Type:
		return unix.EPROTOTYPE
	case len(l.backlog) > l.maxBacklog && nonblocking:
		return unix.EAGAIN
	case len(l.backlog) > l.maxBacklog:
		return ErrWouldBlock
	}
	if err := s.budget.Charge(SocketBytes, SocketCapacity); err != nil {
		return err
	}
	server := &Socket{Family: s.Family, Type: s.Type, Cred: l.Cred, ino: ino, budget: s.budget, name: l.name, peer: s}
	s.peer = server
	l.backlog = append(l.backlog, server)
	l.queue.Notify(EventIn)
	s.queue.Notify(EventOut)
	return nil
}

// Accept takes the oldest connection of a listening socket's backlog, as
// a socket opened with flags' O_NONBLOCK: EINVAL for a socket that does
// not listen; an empty backlog blocks (EAGAIN if nonblocking).
func (s *Socket) Accept(flags uint64, nonblocking bool) (*OpenFile, error) {
	switch {
	case !s.listening:
		return nil, unix.EINVAL
	case len(s.backlog) == 0 && nonblocking:
		return nil, unix.EAGAIN
	case len(s.backlog) == 0:
		return nil, ErrWouldBlock
	}
	c := s.backlog[0]
	s.backlog = s.backlog[1:]
	c.file = NewOpenFile(c, "", unix.O_RDWR|flags&unix.O_NONBLOCK)
	s.queue.Notify(EventOut) // room for a blocked connect
	return c.file, nil
}

// unbind takes a closing socket's name away: an abstract name is free
// again; a socket file stays, refusing connections.
func (s *Socket) unbind() {
	switch {
	case s.inet():
		s.unbindPort()
	case s.node != nil:
		s.node.sock = nil
	case s.fs != nil && s.fs.abstract[s.name[1:]] == s:
		delete(s.fs.abstract, s.name[1:])
	}
	s.node, s.fs = nil, nil
}
