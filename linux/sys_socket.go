package linux

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/linux/vfs"
)

// Sockets: AF_UNIX's — socketpair's pairs (stream, datagram, seqpacket),
// and stream and seqpacket sockets bound to a path or an abstract name,
// listening, connecting and accepting — and the calls on a socket's
// descriptor. A socket of another family cannot be made yet: socket
// answers EAFNOSUPPORT, and programs fall back or fail clearly. A call on
// a descriptor that is no socket answers ENOTSOCK, and EBADF for one not
// open, as Linux does (bash asks getpeername of its standard input).

// sysSocket makes an unbound, unconnected socket: AF_UNIX's, or a TCP or
// UDP one of AF_INET or AF_INET6 (raw sockets are not made: EAFNOSUPPORT,
// as for every other family).
func sysSocket(t *thread, a args) (uint64, error) {
	family, typ := a[0], a[1]
	var err error
	switch family {
	case unix.AF_UNIX:
		err = unixType(&typ, a[2])
	case unix.AF_INET, unix.AF_INET6:
		err = tcpType(typ, a[2])
	default:
		err = unix.EAFNOSUPPORT
	}
	if err != nil {
		return 0, err
	}
	var flags uint64
	if typ&unix.SOCK_NONBLOCK != 0 {
		flags = unix.O_NONBLOCK
	}
	f, err := vfs.NewSocket(t.k.budget, int(family), vfs.SockType(typ&0xf), flags, t.cred(), t.k.fs.NewIno())
	if err != nil {
		return 0, err
	}
	return t.install(f, typ&unix.SOCK_CLOEXEC != 0)
}

// unixType checks an AF_UNIX socket's type and protocol as unix_create
// does — flags only SOCK_NONBLOCK and SOCK_CLOEXEC (EINVAL), a stream,
// datagram or seqpacket type, SOCK_RAW taken as datagram
// (ESOCKTNOSUPPORT), protocol 0 or PF_UNIX (EPROTONOSUPPORT) — leaving
// the type in typ's low bits.
func unixType(typ *uint64, proto uint64) error {
	switch t := *typ & 0xf; {
	case *typ&^(sockFlags|0xf) != 0:
		return unix.EINVAL
	case proto != 0 && proto != unix.PF_UNIX:
		return unix.EPROTONOSUPPORT
	case t == unix.SOCK_RAW:
		*typ = *typ&^0xf | unix.SOCK_DGRAM
	case t != unix.SOCK_STREAM && t != unix.SOCK_DGRAM && t != unix.SOCK_SEQPACKET:
		return unix.ESOCKTNOSUPPORT
	}
	return nil
}

// tcpType checks an internet socket's type and protocol: a stream of
// protocol 0 or IPPROTO_TCP, a datagram of 0 or IPPROTO_UDP; EINVAL for
// other flags, EAFNOSUPPORT for a type not made (a raw socket),
// EPROTONOSUPPORT for another protocol.
func tcpType(typ, proto uint64) error {
	switch t := typ & 0xf; {
	case typ&^(sockFlags|0xf) != 0:
		return unix.EINVAL
	case t != unix.SOCK_STREAM && t != unix.SOCK_DGRAM:
		return unix.EAFNOSUPPORT
	case t == unix.SOCK_STREAM && proto != 0 && proto != unix.IPPROTO_TCP,
		t == unix.SOCK_DGRAM && proto != 0 && proto != unix.IPPROTO_UDP:
		return unix.EPROTONOSUPPORT
	}
	return nil
}

// cred is who t's process is, as SO_PEERCRED says: pid, uid, gid.
func (t *thread) cred() [3]uint32 {
	c := t.proc.cred
	return [3]uint32{uint32(t.proc.pid), c.euid, c.egid}
}

// sockFlags are the flags socket and socketpair take in their type.
const sockFlags = unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC

// sysSocketpair makes two connected AF_UNIX sockets and writes their
// descriptors: EAFNOSUPPORT for another family, EOPNOTSUPP for AF_INET's
// (which has no pairs), ESOCKTNOSUPPORT for a type AF_UNIX has not,
// EPROTONOSUPPORT for a protocol.
func sysSocketpair(t *thread, a args) (uint64, error) {
	family, typ := a[0], a[1]
	switch {
	case family == unix.AF_INET || family == unix.AF_INET6:
		return 0, unix.EOPNOTSUPP
	case family != unix.AF_UNIX:
		return 0, unix.EAFNOSUPPORT
	}
	if err := unixType(&typ, a[2]); err != nil {
		return 0, err
	}
	var flags uint64
	if typ&unix.SOCK_NONBLOCK != 0 {
		flags = unix.O_NONBLOCK
	}
	ino := t.k.fs.NewIno()
	t.k.fs.NewIno()
	x, y, err := vfs.NewSocketPair(t.k.budget, unix.AF_UNIX, vfs.SockType(typ&0xf), flags, t.cred(), ino)
	if err != nil {
		return 0, err
	}
	cloexec := typ&unix.SOCK_CLOEXEC != 0
	fx, err := t.proc.fds.Install(x, cloexec, 0)
	if err != nil {
		x.Release()
		y.Release()
		return 0, err
	}
	fy, err := t.proc.fds.Install(y, cloexec, 0)
	if err != nil {
		t.proc.closeFD(fx)
		y.Release()
		return 0, err
	}
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:], uint32(fx))
	binary.LittleEndian.PutUint32(b[4:], uint32(fy))
	if err := t.proc.as.Write(a[3], b[:]); err != nil {
		t.proc.closeFD(fx)
		t.proc.closeFD(fy)
		return 0, memErr(err)
	}
	return 0, nil
}

// sockDev is the device sockfs's inodes are on, as stat says.
const sockDev = 8

// socketOf is the socket f is, nil for another file or none.
func socketOf(f *openFile) *vfs.Socket {
	if f == nil {
		return nil
	}
	return vfs.SocketOf(f)
}

// socketAt is the socket descriptor fd is: EBADF if it is not open,
// ENOTSOCK if it is something else.
func (t *thread) socketAt(fd uint64) (*openFile, *vfs.Socket, error) {
	f, err := t.proc.fds.Get(fd)
	if err != nil {
		return nil, nil, err
	}
	s := vfs.SocketOf(f)
	if s == nil {
		return nil, nil, unix.ENOTSOCK
	}
	return f, s, nil
}

// The flags of send and recv that are served; others are ignored, as
// Linux ignores what a socket's family does not use.
const (
	msgPeek     = unix.MSG_PEEK
	msgTrunc    = unix.MSG_TRUNC
	msgDontwait = unix.MSG_DONTWAIT
	msgNosignal = unix.MSG_NOSIGNAL
)

// send gives b, and files (SCM_RIGHTS), to s's peer for t: ErrWouldBlock
// waits for room; a peer gone is EPIPE, with SIGPIPE unless MSG_NOSIGNAL.
func (t *thread) send(f *openFile, s *vfs.Socket, b []byte, files []*openFile, flags uint64) (uint64, error) {
	n, err := s.SendRights(b, files, flags&msgDontwait != 0 || f.Flags&unix.O_NONBLOCK != 0)
	switch {
	case errors.Is(err, vfs.ErrWouldBlock):
		return 0, t.waitSocket(s.Timeouts[sndTimeo], f)
	case errors.Is(err, vfs.ErrNoReaders) && flags&msgNosignal != 0:
		return 0, unix.EPIPE
	case errors.Is(err, vfs.ErrNoReaders):
		return 0, t.brokenPipe()
	}
	return uint64(n), err
}

// recvFrom takes what was sent s into b for t: ErrWouldBlock waits. It
// returns the bytes taken, the message's whole length, the files sent
// with it (the caller's references: a receive without room for them drops
// them, as Linux's) and who sent it.
func (t *thread) recvFrom(f *openFile, s *vfs.Socket, b []byte, flags uint64) (int, int, []*openFile, vfs.Sender, error) {
	got, n, files, from, err := s.RecvFrom(b, flags&msgPeek != 0, flags&msgDontwait != 0 || f.Flags&unix.O_NONBLOCK != 0)
	if errors.Is(err, vfs.ErrWouldBlock) {
		return 0, 0, nil, from, t.waitSocket(s.Timeouts[rcvTimeo], f)
	}
	return got, n, files, from, err
}

// senderAddr is the address of who sent s a message, as recvfrom gives
// it: its sender's, or a pair's peer's; none for an unnamed one.
func senderAddr(s *vfs.Socket, from vfs.Sender) []byte {
	switch {
	case from.Addr.IsValid():
		return inetSockaddr(s.Family, from.Addr)
	case from.Name != "":
		return sockaddrOf(from.Name)
	case peerName(s) != "":
		return sockaddrOf(peerName(s))
	}
	return nil // an unnamed AF_UNIX sender: no address at all, as Linux's unix_copy_addr
}

// The socket timeouts, by index into vfs.Socket.Timeouts.
const (
	rcvTimeo = 0
	sndTimeo = 1
)

// waitSocket waits for file to change, as a blocked socket call does:
// for ever, or with a timeout (SO_RCVTIMEO, SO_SNDTIMEO), until it
// passes — then the call, run once more, is EAGAIN, as Linux's.
func (t *thread) waitSocket(timeout time.Duration, file *openFile) error {
	switch {
	case timeout == 0:
		return t.blockOnFiles(file)
	case t.timeUp():
		return unix.EAGAIN
	}
	_, err := t.waitReady(timeout, []*openFile{file})
	return err
}

// maxSockIO bounds what one send or receive moves: a socket's buffer
// holds no more.
const maxSockIO = vfs.SocketCapacity

// sysSendto sends the buffer: a datagram socket to the address given, if
// any; an address is EISCONN on a connected stream.
func sysSendto(t *thread, a args) (uint64, error) {
	f, s, err := t.socketAt(a[0])
	if err != nil {
		return 0, err
	}
	b := make([]byte, min(a[2], maxSockIO))
	if err := t.proc.as.Read(a[1], b); err != nil {
		return 0, memErr(err)
	}
	return t.sendTo(f, s, b, nil, a[3], a[4], a[5])
}

// sendTo sends b as send does, or, with an address (nameVA, nameLen), to
// it — a datagram socket's receiver found by address: a UDP port, or an
// AF_UNIX path (write permission needed; ENOENT for none, ECONNREFUSED
// for a file no socket has) or abstract name. A stream given an address
// when connected is EISCONN; a socketpair's datagram one too.
func (t *thread) sendTo(f *openFile, s *vfs.Socket, b []byte, files []*openFile, flags, nameVA, nameLen uint64) (uint64, error) {
	switch {
	case nameVA == 0 || nameLen == 0:
		return t.send(f, s, b, files, flags)
	case s.Type != unix.SOCK_DGRAM || s.Peer() != nil:
		if s.Connected() {
			return 0, unix.EISCONN
		}
		return t.send(f, s, b, files, flags)
	}
	var to *vfs.Socket
	var addr netip.AddrPort
	var err error
	if s.Family == unix.AF_UNIX {
		to, err = t.unixSocketAt(nameVA, nameLen)
	} else {
		addr, err = t.readInetAddr(s, nameVA, nameLen, false)
	}
	if err != nil {
		return 0, err
	}
	n, err := t.k.fs.SendTo(s, b, to, addr, flags&msgDontwait != 0 || f.Flags&unix.O_NONBLOCK != 0)
	switch {
	case errors.Is(err, vfs.ErrWouldBlock):
		return 0, t.waitSocket(s.Timeouts[sndTimeo], to.File())
	case errors.Is(err, vfs.ErrNoReaders) && flags&msgNosignal != 0:
		return 0, unix.EPIPE
	case errors.Is(err, vfs.ErrNoReaders):
		return 0, t.brokenPipe()
	}
	return uint64(n), err
}

// unixSocketAt is the socket an AF_UNIX address of n bytes at va names:
// a socket file's (ENOENT if there is none, EACCES without write
// permission; nil for another file or one whose socket closed) or an
// abstract name's (nil if no socket has it).
func (t *thread) unixSocketAt(va, n uint64) (*vfs.Socket, error) {
	addr, err := t.readUnixAddr(va, n)
	if err != nil {
		return nil, err
	}
	if addr.abstract {
		return t.k.fs.Abstract(addr.name), nil
	}
	abs, err := t.resolve(atFDCWD, addr.name)
	if err != nil {
		return nil, err
	}
	node, err := t.lookup(abs)
	if err != nil {
		return nil, err
	}
	if err := t.k.fs.Access(node, vfs.MayWrite); err != nil {
		return nil, err
	}
	return node.Bound(), nil
}

// sysRecvfrom receives into the buffer, and the sender's address when
// asked for (a message socket's).
func sysRecvfrom(t *thread, a args) (uint64, error) {
	f, s, err := t.socketAt(a[0])
	if err != nil {
		return 0, err
	}
	b := make([]byte, min(a[2], maxSockIO))
	got, n, files, from, err := t.recvFrom(f, s, b, a[3])
	vfs.DropRefs(files)
	if err != nil {
		return 0, err
	}
	if err := t.proc.as.Write(a[1], b[:got]); err != nil {
		return 0, memErr(err)
	}
	if a[4] != 0 && a[5] != 0 && !s.Stream() {
		if err := t.writeSockaddr(a[4], a[5], senderAddr(s, from)); err != nil {
			return 0, err
		}
	}
	if a[3]&msgTrunc != 0 {
		return uint64(n), nil
	}
	return uint64(got), nil
}

// msghdr is struct msghdr's fields.
type msghdr struct {
	name, namelen, iov, iovlen, control, controllen, flags uint64
}

func (t *thread) readMsghdr(va uint64) (msghdr, error) {
	var b [56]byte
	if err := t.proc.as.Read(va, b[:]); err != nil {
		return msghdr{}, memErr(err)
	}
	le := binary.LittleEndian
	return msghdr{le.Uint64(b[0:]), uint64(le.Uint32(b[8:])), le.Uint64(b[16:]), le.Uint64(b[24:]),
		le.Uint64(b[32:]), le.Uint64(b[40:]), uint64(le.Uint32(b[48:]))}, nil
}

// sysSendmsg gathers the message's iovecs and sends them as one, with
// the files of an SCM_RIGHTS control message.
func sysSendmsg(t *thread, a args) (uint64, error) {
	f, s, err := t.socketAt(a[0])
	if err != nil {
		return 0, err
	}
	m, err := t.readMsghdr(a[1])
	if err != nil {
		return 0, err
	}
	files, err := t.readRights(s, m)
	if err != nil {
		return 0, err
	}
	segs, total, err := t.iovecs(m.iov, m.iovlen)
	if err != nil {
		return 0, err
	}
	b := make([]byte, 0, min(total, maxSockIO))
	for _, seg := range segs {
		part := make([]byte, min(seg.len, maxSockIO-uint64(len(b))))
		if err := t.proc.as.Read(seg.base, part); err != nil {
			return 0, memErr(err)
		}
		b = append(b, part...)
	}
	return t.sendTo(f, s, b, files, a[2], m.name, m.namelen)
}

// sysRecvmsg receives one message (or a stream's bytes) and scatters it
// over the iovecs, the files sent with it as an SCM_RIGHTS control
// message; msg_flags says MSG_TRUNC for a message cut short, MSG_CTRUNC
// for files that did not fit.
func sysRecvmsg(t *thread, a args) (uint64, error) {
	f, s, err := t.socketAt(a[0])
	if err != nil {
		return 0, err
	}
	m, err := t.readMsghdr(a[1])
	if err != nil {
		return 0, err
	}
	segs, total, err := t.iovecs(m.iov, m.iovlen)
	if err != nil {
		return 0, err
	}
	b := make([]byte, min(total, maxSockIO))
	got, n, files, from, err := t.recvFrom(f, s, b, a[2])
	if err != nil {
		return 0, err
	}
	controllen, truncated, err := t.writeRights(m, files, a[2]&unix.MSG_CMSG_CLOEXEC != 0)
	if err != nil {
		return 0, err
	}
	rest := b[:got]
	for _, seg := range segs {
		part := rest[:min(uint64(len(rest)), seg.len)]
		if err := t.proc.as.Write(seg.base, part); err != nil {
			return 0, memErr(err)
		}
		rest = rest[len(part):]
	}
	var flags uint32
	if n > got {
		flags |= unix.MSG_TRUNC
	}
	if truncated {
		flags |= unix.MSG_CTRUNC
	}
	var out [4]byte
	binary.LittleEndian.PutUint32(out[:], flags)
	if err := t.proc.as.Write(a[1]+48, out[:]); err != nil {
		return 0, memErr(err)
	}
	if err := t.proc.as.PutUint64(a[1]+40, controllen); err != nil {
		return 0, memErr(err)
	}
	namelen := uint32(0)
	if m.name != 0 && !s.Stream() {
		addr := senderAddr(s, from)
		if err := t.proc.as.Write(m.name, addr[:min(uint64(len(addr)), m.namelen)]); err != nil {
			return 0, memErr(err)
		}
		namelen = uint32(len(addr))
	}
	binary.LittleEndian.PutUint32(out[:], namelen)
	if err := t.proc.as.Write(a[1]+8, out[:]); err != nil {
		return 0, memErr(err)
	}
	if a[2]&msgTrunc != 0 {
		return uint64(n), nil
	}
	return uint64(got), nil
}

// sysShutdown shuts a socket for reading, writing or both.
func sysShutdown(t *thread, a args) (uint64, error) {
	_, s, err := t.socketAt(a[0])
	if err != nil {
		return 0, err
	}
	if a[1] > unix.SHUT_RDWR {
		return 0, unix.EINVAL
	}
	return 0, s.Shutdown(int(a[1]))
}

// peerName is the name of s's peer (or of where an AF_UNIX datagram
// socket connected), "" for none.
func peerName(s *vfs.Socket) string {
	if p := s.Peer(); p != nil {
		return p.Name()
	}
	if d := s.Dest(); d != nil {
		return d.Name()
	}
	return ""
}

// writeSockaddr writes addr to the buffer at va, whose length is the
// socklen_t at lenVA, cut to it, and the address's whole length there.
func (t *thread) writeSockaddr(va, lenVA uint64, addr []byte) error {
	var b [4]byte
	if err := t.proc.as.Read(lenVA, b[:]); err != nil {
		return memErr(err)
	}
	room := int32(binary.LittleEndian.Uint32(b[:]))
	if room < 0 {
		return unix.EINVAL
	}
	if err := t.proc.as.Write(va, addr[:min(len(addr), int(room))]); err != nil {
		return memErr(err)
	}
	binary.LittleEndian.PutUint32(b[:], uint32(len(addr)))
	return memErr(t.proc.as.Write(lenVA, b[:]))
}

// sysGetsockname is the socket's address.
func sysGetsockname(t *thread, a args) (uint64, error) {
	_, s, err := t.socketAt(a[0])
	if err != nil {
		return 0, err
	}
	return 0, t.writeSockaddr(a[1], a[2], ownAddr(s))
}

// sysGetpeername is the peer's address: ENOTCONN without one.
func sysGetpeername(t *thread, a args) (uint64, error) {
	_, s, err := t.socketAt(a[0])
	if err != nil {
		return 0, err
	}
	if s.Peer() == nil && s.Dest() == nil && !s.Remote().IsValid() {
		return 0, unix.ENOTCONN
	}
	return 0, t.writeSockaddr(a[1], a[2], peerAddr(s))
}

// sysGetsockopt answers SOL_SOCKET's options — the socket's type,
// family, protocol, error (none), buffer sizes, SO_PEERCRED (who made the
// peer) — and what setsockopt set at any level; ENOPROTOOPT for the rest.
func sysGetsockopt(t *thread, a args) (uint64, error) {
	_, s, err := t.socketAt(a[0])
	if err != nil {
		return 0, err
	}
	var v []byte
	switch {
	case a[1] != unix.SOL_SOCKET && s.Family == unix.AF_UNIX:
		return 0, unix.EOPNOTSUPP
	case a[1] == unix.SOL_SOCKET && timeoutOpt(a[2]) >= 0:
		d := s.Timeouts[timeoutOpt(a[2])]
		v = binary.LittleEndian.AppendUint64(nil, uint64(d/time.Second))
		v = binary.LittleEndian.AppendUint64(v, uint64(d%time.Second/time.Microsecond))
	case a[1] == unix.SOL_SOCKET && a[2] == unix.SO_LINGER:
		on, secs := s.Linger()
		v = make([]byte, 8)
		if on {
			binary.LittleEndian.PutUint32(v, 1)
			binary.LittleEndian.PutUint32(v[4:], uint32(secs))
		}
	case a[1] == unix.SOL_SOCKET && a[2] == unix.SO_PEERCRED:
		v = make([]byte, 12)
		if p := s.Peer(); p != nil {
			binary.LittleEndian.PutUint32(v, p.Cred[0])
			binary.LittleEndian.PutUint32(v[4:], p.Cred[1])
			binary.LittleEndian.PutUint32(v[8:], p.Cred[2])
		} else {
			binary.LittleEndian.PutUint32(v[4:], ^uint32(0))
			binary.LittleEndian.PutUint32(v[8:], ^uint32(0))
		}
	default:
		n, ok := s.Option(int(a[1]), int(a[2]))
		if !ok {
			return 0, unix.ENOPROTOOPT
		}
		v = binary.LittleEndian.AppendUint32(nil, uint32(n))
	}
	var lb [4]byte
	if err := t.proc.as.Read(a[4], lb[:]); err != nil {
		return 0, memErr(err)
	}
	room := int32(binary.LittleEndian.Uint32(lb[:]))
	if room < 0 {
		return 0, unix.EINVAL
	}
	v = v[:min(len(v), int(room))]
	if err := t.proc.as.Write(a[3], v); err != nil {
		return 0, memErr(err)
	}
	binary.LittleEndian.PutUint32(lb[:], uint32(len(v)))
	return 0, memErr(t.proc.as.Write(a[4], lb[:]))
}

// sysSetsockopt keeps integer options (getsockopt says them back; the
// buffers' sizes as Linux doubles them) of SOL_SOCKET, and of IPPROTO_IP,
// IPPROTO_IPV6 and IPPROTO_TCP for an internet socket: ENOPROTOOPT for
// another, EINVAL for a value shorter than an int.
func sysSetsockopt(t *thread, a args) (uint64, error) {
	_, s, err := t.socketAt(a[0])
	if err != nil {
		return 0, err
	}
	if i := timeoutOpt(a[2]); a[1] == unix.SOL_SOCKET && i >= 0 {
		d, err := t.readTimeval(a[3], a[4])
		if err != nil {
			return 0, err
		}
		s.Timeouts[i] = d
		return 0, nil
	}
	if a[1] == unix.SOL_SOCKET && a[2] == unix.SO_LINGER {
		if int32(a[4]) < 8 {
			return 0, unix.EINVAL
		}
		var b [8]byte
		if err := t.proc.as.Read(a[3], b[:]); err != nil {
			return 0, memErr(err)
		}
		s.SetLinger(binary.LittleEndian.Uint32(b[:]) != 0, int32(binary.LittleEndian.Uint32(b[4:])))
		return 0, nil
	}
	if int32(a[4]) < 4 {
		return 0, unix.EINVAL
	}
	v, err := t.loadUint32(a[3])
	if err != nil {
		return 0, err
	}
	return 0, s.SetOption(int(a[1]), int(a[2]), int32(v))
}

// sunMax is sizeof(struct sockaddr_un): the family and a 108-byte path.
const sunMax = 110

// unixAddr is an AF_UNIX address read from the program: a path (as
// given: relative to the working directory), or an abstract name.
type unixAddr struct {
	name     string
	abstract bool
}

// readUnixAddr reads the sockaddr_un of n bytes at va, as Linux's
// unix_validate_addr and unix_mkname read it: EINVAL for one no longer
// than its family (autobind is the caller's), longer than sockaddr_un, or
// of another family; a path ends at its first NUL, an abstract name
// (after a leading NUL) is every byte given.
func (t *thread) readUnixAddr(va, n uint64) (unixAddr, error) {
	if n <= 2 || n > sunMax {
		return unixAddr{}, unix.EINVAL
	}
	b := make([]byte, n)
	if err := t.proc.as.Read(va, b); err != nil {
		return unixAddr{}, memErr(err)
	}
	if binary.LittleEndian.Uint16(b) != unix.AF_UNIX {
		return unixAddr{}, unix.EINVAL
	}
	p := b[2:]
	if p[0] == 0 {
		return unixAddr{name: string(p[1:]), abstract: true}, nil
	}
	if i := bytes.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	return unixAddr{name: string(p)}, nil
}

// sockaddrOf is the sockaddr_un of a socket's name as getsockname,
// getpeername and accept write it: the family alone for an unnamed
// socket, a path with its NUL, an abstract name as it was given.
func sockaddrOf(name string) []byte {
	b := []byte{unix.AF_UNIX, 0}
	if name == "" {
		return b
	}
	b = append(b, name...)
	if name[0] != 0 {
		b = append(b, 0)
	}
	return b
}

// sysBind names a socket: a path makes a socket file (its mode the
// umask's, EADDRINUSE where a file is), an abstract name takes it in the
// abstract namespace, and a family alone autobinds an abstract name of
// five hex digits, as Linux does.
func sysBind(t *thread, a args) (uint64, error) {
	_, s, err := t.socketAt(a[0])
	if err != nil {
		return 0, err
	}
	if s.Family != unix.AF_UNIX {
		addr, err := t.readInetAddr(s, a[1], a[2], true)
		if err != nil {
			return 0, err
		}
		return 0, t.k.fs.BindInet(s, addr, t.proc.cred.root())
	}
	if a[2] == 2 {
		return 0, t.autobind(s)
	}
	addr, err := t.readUnixAddr(a[1], a[2])
	switch {
	case err != nil:
		return 0, err
	case addr.abstract:
		return 0, t.k.fs.BindAbstract(s, addr.name)
	}
	abs, err := t.resolve(atFDCWD, addr.name)
	if err != nil {
		return 0, err
	}
	e, err := t.k.fs.Final(abs)
	if err != nil {
		return 0, err
	}
	return 0, t.k.fs.BindPath(s, e, addr.name, 0o777&^t.proc.umask)
}

// autobind binds s to the first free abstract name of five hex digits
// (Linux's unix_autobind), or EINVAL if it is bound already.
func (t *thread) autobind(s *vfs.Socket) error {
	if s.Name() != "" {
		return unix.EINVAL
	}
	for i := range 1 << 20 {
		if name := fmt.Sprintf("%05x", i); t.k.fs.Abstract(name) == nil {
			return t.k.fs.BindAbstract(s, name)
		}
	}
	return unix.ENOSPC
}

// sysListen makes a bound stream or seqpacket socket listen.
func sysListen(t *thread, a args) (uint64, error) {
	_, s, err := t.socketAt(a[0])
	if err != nil {
		return 0, err
	}
	if s.Family != unix.AF_UNIX {
		return 0, t.k.fs.ListenInet(s, int(int32(a[1])))
	}
	return 0, s.Listen(int(int32(a[1])))
}

// sysConnect connects a datagram socket to an address (connectDgram), or
// a stream or seqpacket socket to the listening one at an address: a
// socket file (ENOENT if there is none, EACCES without write permission,
// ECONNREFUSED for another file or one whose socket closed or does not
// listen) or an abstract name (ECONNREFUSED if no socket has it). A full
// backlog waits on the listener.
func sysConnect(t *thread, a args) (uint64, error) {
	f, s, err := t.socketAt(a[0])
	if err != nil {
		return 0, err
	}
	if s.Type == unix.SOCK_DGRAM && s.Peer() == nil {
		return 0, t.connectDgram(s, a[1], a[2])
	}
	if s.Family != unix.AF_UNIX {
		return 0, t.connectInet(f, s, a[1], a[2])
	}
	addr, err := t.readUnixAddr(a[1], a[2])
	if err != nil {
		return 0, err
	}
	var l *vfs.Socket
	if addr.abstract {
		l = t.k.fs.Abstract(addr.name)
	} else {
		abs, err := t.resolve(atFDCWD, addr.name)
		if err != nil {
			return 0, err
		}
		n, err := t.lookup(abs)
		if err != nil {
			return 0, err
		}
		if err := t.k.fs.Access(n, vfs.MayWrite); err != nil {
			return 0, err
		}
		l = n.Bound()
	}
	err = s.Connect(l, f.Flags&unix.O_NONBLOCK != 0, t.k.fs.NewIno())
	if errors.Is(err, vfs.ErrWouldBlock) {
		return 0, t.waitSocket(s.Timeouts[sndTimeo], l.File())
	}
	return 0, err
}

// connectDgram connects a datagram socket to the address of n bytes at
// va, its default destination and the only sender it then hears; an
// address of family AF_UNSPEC disconnects it.
func (t *thread) connectDgram(s *vfs.Socket, va, n uint64) error {
	var fam [2]byte
	if n >= 2 {
		if err := t.proc.as.Read(va, fam[:]); err != nil {
			return memErr(err)
		}
	}
	if n >= 2 && binary.LittleEndian.Uint16(fam[:]) == unix.AF_UNSPEC {
		return t.k.fs.ConnectDgram(s, nil, netip.AddrPort{}, true)
	}
	if s.Family == unix.AF_UNIX {
		to, err := t.unixSocketAt(va, n)
		if err != nil {
			return err
		}
		return t.k.fs.ConnectDgram(s, to, netip.AddrPort{}, false)
	}
	addr, err := t.readInetAddr(s, va, n, false)
	if err != nil {
		return err
	}
	return t.k.fs.ConnectDgram(s, nil, addr, false)
}

// sysAccept4 takes a connection of a listening socket as a new socket
// (flags SOCK_NONBLOCK, SOCK_CLOEXEC) and writes the client's address.
func sysAccept4(t *thread, a args) (uint64, error) {
	f, s, err := t.socketAt(a[0])
	if err != nil {
		return 0, err
	}
	if a[3]&^sockFlags != 0 {
		return 0, unix.EINVAL
	}
	var flags uint64
	if a[3]&unix.SOCK_NONBLOCK != 0 {
		flags = unix.O_NONBLOCK
	}
	c, err := s.Accept(flags, f.Flags&unix.O_NONBLOCK != 0)
	switch {
	case errors.Is(err, vfs.ErrWouldBlock):
		return 0, t.waitSocket(s.Timeouts[rcvTimeo], f)
	case err != nil:
		return 0, err
	}
	fd, err := t.install(c, a[3]&unix.SOCK_CLOEXEC != 0)
	if err != nil {
		return 0, err
	}
	if a[1] != 0 {
		if err := t.writeSockaddr(a[1], a[2], peerAddr(vfs.SocketOf(c))); err != nil {
			return 0, err // the connection is taken, as on Linux
		}
	}
	return fd, nil
}

func sysAccept(t *thread, a args) (uint64, error) {
	a[3] = 0
	return sysAccept4(t, a)
}

// Control messages (struct cmsghdr: a length, a level, a type, then the
// data, 8-byte aligned).
const (
	cmsgHdrLen  = 16
	maxControl  = 64 << 10 // net.core.optmem_max's order: ENOBUFS past it
	scmRights   = 1
	scmCreds    = 2
	cmsgAlignTo = 8
)

func cmsgAlign(n uint64) uint64 { return (n + cmsgAlignTo - 1) &^ (cmsgAlignTo - 1) }

// readRights reads a sendmsg's control messages: the files of SCM_RIGHTS
// (EBADF for a descriptor not open, EINVAL past MaxRights or on an
// internet socket), SCM_CREDENTIALS taken if they are the sender's own
// (EPERM otherwise); EINVAL for a malformed or unknown message, ENOBUFS
// for a control buffer past maxControl.
func (t *thread) readRights(s *vfs.Socket, m msghdr) ([]*openFile, error) {
	switch {
	case m.controllen == 0:
		return nil, nil
	case m.controllen > maxControl:
		return nil, unix.ENOBUFS
	}
	c := make([]byte, m.controllen)
	if err := t.proc.as.Read(m.control, c); err != nil {
		return nil, memErr(err)
	}
	var files []*openFile
	for off := uint64(0); off+cmsgHdrLen <= uint64(len(c)); {
		le := binary.LittleEndian
		n, level, typ := le.Uint64(c[off:]), le.Uint32(c[off+8:]), le.Uint32(c[off+12:])
		if n < cmsgHdrLen || n > uint64(len(c))-off {
			return nil, unix.EINVAL
		}
		data := c[off+cmsgHdrLen : off+n]
		switch {
		case level != unix.SOL_SOCKET || s.Family != unix.AF_UNIX:
			return nil, unix.EINVAL
		case typ == scmRights:
			if len(data)%4 != 0 || len(files)+len(data)/4 > vfs.MaxRights {
				return nil, unix.EINVAL
			}
			for i := 0; i < len(data); i += 4 {
				f, err := t.proc.fds.Get(uint64(int32(le.Uint32(data[i:]))))
				if err != nil {
					return nil, err
				}
				files = append(files, f)
			}
		case typ == scmCreds:
			cred := t.cred()
			if len(data) < 12 || le.Uint32(data) != cred[0] || le.Uint32(data[4:]) != cred[1] || le.Uint32(data[8:]) != cred[2] {
				return nil, unix.EPERM
			}
		default:
			return nil, unix.EINVAL
		}
		off += cmsgAlign(n)
	}
	return files, nil
}

// writeRights gives a recvmsg the files sent with what it received: as
// many as its control buffer holds are installed (close-on-exec if
// asked) and written as one SCM_RIGHTS message; the rest, and those past
// the descriptors the process may have, are closed and reported as
// truncated. It returns the control bytes used.
func (t *thread) writeRights(m msghdr, files []*openFile, cloexec bool) (used uint64, truncated bool, err error) {
	if len(files) == 0 {
		return 0, false, nil
	}
	fit := 0
	if m.control != 0 && m.controllen >= cmsgHdrLen+4 {
		fit = min(len(files), int(m.controllen-cmsgHdrLen)/4)
	}
	var fds []byte
	for i, f := range files {
		if i >= fit {
			truncated = true
			continue
		}
		fd, err := t.proc.fds.Install(f, cloexec, 0)
		if err != nil {
			truncated = true
			continue
		}
		fds = binary.LittleEndian.AppendUint32(fds, uint32(fd))
	}
	vfs.DropRefs(files) // the in-flight references; installed ones hold their own
	if len(fds) == 0 {
		return 0, truncated, nil
	}
	c := binary.LittleEndian.AppendUint64(nil, uint64(cmsgHdrLen+len(fds)))
	c = binary.LittleEndian.AppendUint32(c, unix.SOL_SOCKET)
	c = binary.LittleEndian.AppendUint32(c, scmRights)
	c = append(c, fds...)
	if err := t.proc.as.Write(m.control, c); err != nil {
		return 0, truncated, memErr(err)
	}
	return min(cmsgAlign(uint64(len(c))), m.controllen), truncated, nil
}

// timeoutOpt is the index into vfs.Socket.Timeouts of a SOL_SOCKET option
// (SO_RCVTIMEO, SO_SNDTIMEO, old and new, the same struct on 64 bits), -1
// for another.
func timeoutOpt(name uint64) int {
	switch name {
	case unix.SO_RCVTIMEO, unix.SO_RCVTIMEO_NEW:
		return rcvTimeo
	case unix.SO_SNDTIMEO, unix.SO_SNDTIMEO_NEW:
		return sndTimeo
	}
	return -1
}

// readTimeval reads a socket timeout, a struct timeval of n bytes at va:
// EINVAL if shorter, EDOM for microseconds out of range; a negative time
// is none, and one past what a Duration holds is for ever too.
func (t *thread) readTimeval(va, n uint64) (time.Duration, error) {
	if int32(n) < 16 {
		return 0, unix.EINVAL
	}
	var b [16]byte
	if err := t.proc.as.Read(va, b[:]); err != nil {
		return 0, memErr(err)
	}
	sec, usec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
	switch {
	case usec < 0 || usec >= 1000000:
		return 0, unix.EDOM
	case sec < 0 || sec >= int64(maxTimeout/time.Second):
		return 0, nil
	}
	// Kept in ticks, as Linux keeps it in jiffies: rounded up to one.
	d := time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond
	return (d + coarseResolution - 1) / coarseResolution * coarseResolution, nil
}

// maxTimeout is the longest socket timeout kept; one longer waits for
// ever.
const maxTimeout = 1 << 62

// mmsghdrSize is struct mmsghdr's: a msghdr and the length it moved.
const mmsghdrSize = 64

// sysSendmmsg sends up to vlen messages (at most IOV_MAX) as sendmsg
// does, writing each one's length: the first may wait; the rest are sent
// while they can be without waiting, and the count sent is returned (an
// error only if none was).
func sysSendmmsg(t *thread, a args) (uint64, error) { return t.eachMsg(a, sysSendmsg) }

// sysRecvmmsg receives up to vlen messages as recvmsg does: the first
// may wait; the rest are taken while some are there, as with
// MSG_WAITFORONE (a wait for all vlen, or the timeout, is not kept).
func sysRecvmmsg(t *thread, a args) (uint64, error) { return t.eachMsg(a, sysRecvmsg) }

// eachMsg serves each mmsghdr of the vector at a[1] with one, the
// messages after the first not waiting.
func (t *thread) eachMsg(a args, one handler) (uint64, error) {
	if _, _, err := t.socketAt(a[0]); err != nil {
		return 0, err
	}
	vlen := min(a[2], maxIOV)
	for i := range vlen {
		hdr, flags := a[1]+i*mmsghdrSize, a[3]&^unix.MSG_WAITFORONE
		if i > 0 {
			flags |= msgDontwait
		}
		n, err := one(t, args{a[0], hdr, flags})
		if err != nil {
			if i == 0 {
				return 0, err
			}
			return i, nil
		}
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(n))
		if err := t.proc.as.Write(hdr+56, b[:]); err != nil {
			if i == 0 {
				return 0, memErr(err)
			}
			return i, nil
		}
	}
	return vlen, nil
}
