package linux

import (
	"encoding/binary"
	"errors"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/linux/vfs"
)

// Internet sockets' addresses as the program reads and writes them:
// sockaddr_in (16 bytes: family, port in network order, address) and
// sockaddr_in6 (28: family, port, flow label, address, scope).

const (
	sockaddrIn4Len = 16
	sockaddrIn6Len = 28
)

// readInetAddr reads the address of n bytes at va for s: an AF_INET
// socket's sockaddr_in (EINVAL if shorter; EAFNOSUPPORT for another
// family, but AF_UNSPEC with the wildcard, which bind takes as it), an
// AF_INET6 socket's sockaddr_in6 (EINVAL if shorter, EAFNOSUPPORT for
// another family).
func (t *thread) readInetAddr(s *vfs.Socket, va, n uint64, bind bool) (netip.AddrPort, error) {
	want := uint64(sockaddrIn4Len)
	if s.Family == unix.AF_INET6 {
		want = sockaddrIn6Len - 4 // SIN6_LEN_RFC2133: without the scope
	}
	if n < want || n > 128 {
		return netip.AddrPort{}, unix.EINVAL
	}
	b := make([]byte, n)
	if err := t.proc.as.Read(va, b); err != nil {
		return netip.AddrPort{}, memErr(err)
	}
	fam := int(binary.LittleEndian.Uint16(b))
	port := binary.BigEndian.Uint16(b[2:])
	if s.Family == unix.AF_INET6 {
		if fam != unix.AF_INET6 {
			return netip.AddrPort{}, unix.EAFNOSUPPORT
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), port), nil
	}
	a := netip.AddrFrom4([4]byte(b[4:8]))
	if fam != unix.AF_INET && !(bind && fam == unix.AF_UNSPEC && a.IsUnspecified()) {
		return netip.AddrPort{}, unix.EAFNOSUPPORT
	}
	return netip.AddrPortFrom(a, port), nil
}

// inetSockaddr is a as a socket of family fam gives it.
func inetSockaddr(fam int, a netip.AddrPort) []byte {
	if fam == unix.AF_INET6 {
		b := make([]byte, sockaddrIn6Len)
		binary.LittleEndian.PutUint16(b, unix.AF_INET6)
		binary.BigEndian.PutUint16(b[2:], a.Port())
		ip := a.Addr().As16()
		copy(b[8:], ip[:])
		return b
	}
	b := make([]byte, sockaddrIn4Len)
	binary.LittleEndian.PutUint16(b, unix.AF_INET)
	binary.BigEndian.PutUint16(b[2:], a.Port())
	if a.Addr().IsValid() {
		ip := a.Addr().Unmap().As4()
		copy(b[4:], ip[:])
	}
	return b
}

// ownAddr is s's address as getsockname gives it: an unbound internet
// socket's is its family's wildcard, port 0.
func ownAddr(s *vfs.Socket) []byte {
	if s.Family == unix.AF_UNIX {
		return sockaddrOf(s.Name())
	}
	return inetSockaddr(s.Family, s.Local())
}

// peerAddr is the address of s's peer, as getpeername and accept give it.
func peerAddr(s *vfs.Socket) []byte {
	if s.Family == unix.AF_UNIX {
		return sockaddrOf(peerName(s))
	}
	return inetSockaddr(s.Family, s.Remote())
}

// connectInet connects a TCP socket to the address of n bytes at va: a
// full backlog waits on the listener, a connection to a host address
// (--egress) on the socket itself for the host's answer.
func (t *thread) connectInet(f *openFile, s *vfs.Socket, va, n uint64) error {
	addr, err := t.readInetAddr(s, va, n, false)
	if err != nil {
		return err
	}
	wait, err := t.k.fs.ConnectInet(s, addr, f.Flags&unix.O_NONBLOCK != 0, t.k.fs.NewIno())
	if errors.Is(err, vfs.ErrWouldBlock) {
		if wait == nil {
			wait = f
		}
		return t.waitSocket(s.Timeouts[sndTimeo], wait)
	}
	return err
}
