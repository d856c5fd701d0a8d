package vfs

import (
	"fmt"
	"maps"

	"golang.org/x/sys/unix"
)

// SavedSocket is a socket: its buffer (a message socket's messages as
// their lengths), shutdowns, and its peer as the index of the peer's open
// file (-1 for none).
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
}

func (sv *Saver) socket(s *Socket) *SavedSocket {
	ss := &SavedSocket{Family: s.Family, Type: int(s.Type), Peer: -1, PeerGone: s.peerGone, Buf: s.buf, Msgs: s.msgs,
		ShutRead: s.shutRead, ShutWrite: s.shutWrite, EOF: s.eof, Cred: s.Cred, Ino: s.ino, Options: maps.Clone(s.options)}
	if s.peer != nil {
		ss.Peer = sv.File(s.peer.file)
	}
	return ss
}

// check refuses a socket of a family or type there is not, a buffer
// past its capacity or whose messages are not its bytes, or a peer that
// is not a socket connected back to it.
func (s *SavedSocket) check(i int, files []SavedFile) error {
	msgBytes := 0
	for _, n := range s.Msgs {
		if n < 0 {
			return fmt.Errorf("a message of %d bytes", n)
		}
		msgBytes += n
	}
	switch {
	case s.Family != unix.AF_UNIX:
		return fmt.Errorf("family %d", s.Family)
	case s.Type != unix.SOCK_STREAM && s.Type != unix.SOCK_DGRAM && s.Type != unix.SOCK_SEQPACKET:
		return fmt.Errorf("type %d", s.Type)
	case len(s.Buf)+msgOverhead*len(s.Msgs) > SocketCapacity:
		return fmt.Errorf("%d bytes and %d messages buffered", len(s.Buf), len(s.Msgs))
	case s.Type == unix.SOCK_STREAM && len(s.Msgs) > 0, s.Type != unix.SOCK_STREAM && msgBytes != len(s.Buf):
		return fmt.Errorf("messages of %d bytes in %d buffered", msgBytes, len(s.Buf))
	case s.Peer < -1 || s.Peer >= len(files) || s.Peer == i:
		return fmt.Errorf("peer %d", s.Peer)
	case s.Peer >= 0 && s.PeerGone:
		return fmt.Errorf("a peer, and gone")
	}
	for name := range s.Options {
		if _, ok := settable[name]; !ok {
			return fmt.Errorf("option %d", name)
		}
	}
	if s.Peer >= 0 {
		p := files[s.Peer].Socket
		if p == nil || p.Peer != i || p.Family != s.Family || p.Type != s.Type {
			return fmt.Errorf("peer %d is not a socket connected back to it", s.Peer)
		}
	}
	return nil
}

// restore is the saved socket, its peer linked later (linkSockets).
func (s *SavedSocket) restore(b *Budget) *Socket {
	return &Socket{Family: s.Family, Type: SockType(s.Type), peerGone: s.PeerGone, buf: s.Buf, msgs: s.Msgs,
		shutRead: s.ShutRead, shutWrite: s.ShutWrite, eof: s.EOF, Cred: s.Cred, ino: s.Ino, options: maps.Clone(s.Options), budget: b}
}
