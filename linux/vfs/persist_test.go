package vfs

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/vmm/door"
)

// state is what a Saver saved of a tree and descriptor table.
type state struct {
	nodes   []SavedNode
	nextIno uint64
	pipes   []SavedPipe
	files   []SavedFile
	sockets []SavedSocket
	fds     map[int]SavedFD
}

// roundTrip saves fs and fds, checks the state, and restores it on a fresh
// tree, whose budget, counted from the state, must be b.
func roundTrip(t *testing.T, fs *FileSystem, b *Budget, fds FDTable, console *Console) (state, *Restored) {
	t.Helper()
	s := save(fs, fds)
	require.NoError(t, Check(s.nodes, s.nextIno, s.pipes, s.files, s.sockets))
	fresh, rb := tree(t)
	restored, err := Restore(fresh, s.nodes, s.nextIno, s.pipes, s.files, s.sockets, console, nil, nil)
	require.NoError(t, err)
	*rb = Budget{} // counted again from what the state holds, as the kernel does
	restored.Charge(rb)
	require.Equal(t, *b, *rb, "the budget counted from the restored state")
	return s, restored
}

func save(fs *FileSystem, fds FDTable) state {
	sv := NewSaver(fs.Root())
	saved := sv.FDs(fds)
	return state{sv.Nodes, fs.NextIno(), sv.Pipes, sv.Files, sv.Sockets, saved}
}

// A tree with a written file, a removed one still open, a pipe with bytes
// in it, the console and a directory restores to the same state, holding
// the same budget.
func TestSaveRestore(t *testing.T) {
	fs, b := tree(t)
	var out bytes.Buffer
	console := NewConsole(&out)
	fds := NewFDTable(console)
	n, err := fs.Add("/tmp/w", nil, 0o600)
	require.NoError(t, err)
	f := fs.Open(n, "/tmp/w", unix.O_RDWR)
	_, err = f.Write([]byte("written"), 0)
	require.NoError(t, err)
	f.Off = 3
	_, err = fds.Install(f, true, 0)
	require.NoError(t, err)
	gone, _ := fs.Lookup("/etc/passwd")
	_, err = fds.Install(fs.Open(gone, "/etc/passwd", unix.O_RDONLY), false, 0)
	require.NoError(t, err)
	e, _ := fs.Parent("/etc/passwd")
	require.NoError(t, fs.Remove(e, false))
	r, w, err := NewPipe(b, 0, 0)
	require.NoError(t, err)
	_, err = w.Write([]byte("in the pipe"), 0)
	require.NoError(t, err)
	_, err = fds.Install(r, false, 0)
	require.NoError(t, err)
	_, err = fds.Install(w, false, 0)
	require.NoError(t, err)
	root := fs.Root()
	_, err = fds.Install(fs.Open(root, "/", unix.O_RDONLY), false, 0)
	require.NoError(t, err)
	sa, sb, err := NewSocketPair(b, unix.AF_UNIX, unix.SOCK_SEQPACKET, 0, [3]uint32{1, 2, 3}, 40)
	require.NoError(t, err)
	_, err = SocketOf(sa).SendRights([]byte("one"), []*OpenFile{r}, false) // the pipe's read end, in flight
	require.NoError(t, err)
	_, err = sa.Write([]byte("two!"), 0)
	require.NoError(t, err)
	require.NoError(t, SocketOf(sb).SetOption(unix.SOL_SOCKET, unix.SO_RCVBUF, 5000))
	_, err = fds.Install(sa, false, 0) // 8
	require.NoError(t, err)
	_, err = fds.Install(sb, false, 0) // 9
	require.NoError(t, err)
	lf, err := NewSocket(b, unix.AF_UNIX, unix.SOCK_STREAM, 0, [3]uint32{4, 5, 6}, 41)
	require.NoError(t, err)
	require.NoError(t, fs.BindAbstract(SocketOf(lf), "listener"))
	require.NoError(t, SocketOf(lf).Listen(8))
	cf, err := NewSocket(b, unix.AF_UNIX, unix.SOCK_STREAM, 0, [3]uint32{7, 8, 9}, 42)
	require.NoError(t, err)
	require.NoError(t, SocketOf(cf).Connect(SocketOf(lf), false, 43))
	_, err = cf.Write([]byte("before accept"), 0)
	require.NoError(t, err)
	tl, err := NewSocket(b, unix.AF_INET6, unix.SOCK_STREAM, 0, [3]uint32{}, 44)
	require.NoError(t, err)
	require.NoError(t, fs.BindInet(SocketOf(tl), netip.MustParseAddrPort("[::]:8080"), true))
	require.NoError(t, fs.ListenInet(SocketOf(tl), 4))
	tc, err := NewSocket(b, unix.AF_INET, unix.SOCK_STREAM, 0, [3]uint32{}, 45)
	require.NoError(t, err)
	_, err = fs.ConnectInet(SocketOf(tc), netip.MustParseAddrPort("127.0.0.1:8080"), false, 46)
	require.NoError(t, err)
	for _, f := range []*OpenFile{lf, cf, tl, tc} { // 10 to 13
		_, err = fds.Install(f, false, 0)
		require.NoError(t, err)
	}

	s := save(fs, fds)
	require.NoError(t, Check(s.nodes, s.nextIno, s.pipes, s.files, s.sockets))
	require.NoError(t, CheckFDs(s.fds, len(s.files)))

	fresh, rb := tree(t) // what a new kernel made from the same program has
	restored, err := Restore(fresh, s.nodes, s.nextIno, s.pipes, s.files, s.sockets, console, nil, nil)
	require.NoError(t, err)
	*rb = Budget{} // counted again from what the state holds, as the kernel does
	restored.Charge(rb)
	require.Equal(t, *b, *rb, "the budget counted from the restored state")
	rfds := restored.FDs(s.fds)
	require.Equal(t, s, save(restored.FS, rfds), "restored, then saved again: the same state")

	// The restored files work: the pipe has its bytes, the removed file
	// is freed when its descriptor closes.
	buf := make([]byte, 32)
	pr, _ := rfds.Get(5)
	got, err := pr.Read(buf, 0)
	require.NoError(t, err)
	require.Equal(t, "in the pipe", string(buf[:got]))
	sock, _ := rfds.Get(9)
	got, _, passed, err := SocketOf(sock).RecvRights(buf, false, true)
	require.NoError(t, err)
	require.Equal(t, "one", string(buf[:got]), "a message at a time")
	require.Len(t, passed, 1, "the file sent with it")
	require.Same(t, pr, passed[0], "the pipe's read end, the same open file as descriptor 5's")
	require.Equal(t, 2, pr.Refs, "its descriptor's reference and the one in flight")
	DropRefs(passed)
	v, _ := SocketOf(sock).Option(unix.SOL_SOCKET, unix.SO_RCVBUF)
	require.Equal(t, int32(10000), v)
	other, _ := rfds.Get(8)
	require.Same(t, SocketOf(other), SocketOf(sock).Peer(), "connected again")
	listener, _ := rfds.Get(10)
	require.Same(t, SocketOf(listener), restored.FS.Abstract("listener"), "its name bound again")
	accepted, err := SocketOf(listener).Accept(0, true)
	require.NoError(t, err, "the connection waited in the backlog")
	got, err = accepted.Read(buf, 0)
	require.NoError(t, err)
	require.Equal(t, "before accept", string(buf[:got]))
	client, _ := rfds.Get(11)
	require.Same(t, SocketOf(client), SocketOf(accepted).Peer())
	require.Equal(t, [3]uint32{4, 5, 6}, SocketOf(client).Peer().Cred, "the client's peer is the listener's")
	other6, err := NewSocket(rb, unix.AF_INET, unix.SOCK_STREAM, 0, [3]uint32{}, 99)
	require.NoError(t, err)
	require.ErrorIs(t, restored.FS.BindInet(SocketOf(other6), netip.MustParseAddrPort("127.0.0.1:8080"), true), unix.EADDRINUSE, "the port is taken again")
	tcpListener, _ := rfds.Get(12)
	conn, err := SocketOf(tcpListener).Accept(0, true)
	require.NoError(t, err)
	require.Equal(t, "[::ffff:127.0.0.1]:8080", SocketOf(conn).Local().String())
	tcpClient, _ := rfds.Get(13)
	require.Equal(t, SocketOf(tcpClient).Local().Port(), SocketOf(conn).Remote().Port())
	require.Equal(t, "127.0.0.1:8080", SocketOf(tcpClient).Remote().String())
	nodes := rb[Nodes]
	rfds.Close(4)
	require.Equal(t, nodes-1, rb[Nodes])
	_, err = rfds[1].File.Write([]byte("out"), 0)
	require.NoError(t, err)
	require.Equal(t, "out", out.String())
}

// A forged state is refused, with an error that names what is wrong.
func TestForgedState(t *testing.T) {
	fs, b := tree(t)
	fds := NewFDTable(NewConsole(&bytes.Buffer{}))
	r, _, err := NewPipe(b, 0, 0)
	require.NoError(t, err)
	_, err = fds.Install(r, false, 0)
	require.NoError(t, err)
	n, _ := fs.Lookup("/bin/sh")
	_, err = fds.Install(fs.Open(n, "/bin/sh", unix.O_RDONLY), false, 0)
	require.NoError(t, err)
	sa, sb, err := NewSocketPair(b, unix.AF_UNIX, unix.SOCK_DGRAM, 0, [3]uint32{}, 50)
	require.NoError(t, err)
	_, err = sa.Write([]byte("datagram"), 0)
	require.NoError(t, err)
	for _, f := range []*OpenFile{sa, sb} {
		_, err = fds.Install(f, false, 0)
		require.NoError(t, err)
	}
	for _, tc := range []struct {
		name  string
		forge func(s *state)
		want  string
	}{
		{"no root", func(s *state) { s.nodes = nil }, "0 files"},
		{"root a file", func(s *state) { s.nodes[0].Dir = false; s.nodes[0].Children = nil }, "root is not a directory"},
		{"loop", func(s *state) { s.nodes[0].Children["loop"] = 0 }, `entry "loop"`},
		{"two parents", func(s *state) { s.nodes[1].Children["again"] = 1 }, `entry "again"`},
		{"a slash in a name", func(s *state) {
			s.nodes[0].Children["a/b"] = s.nodes[0].Children["etc"]
			delete(s.nodes[0].Children, "etc")
		}, `entry "a/b"`},
		{"inode twice", func(s *state) { s.nodes[1].Ino = s.nodes[0].Ino }, "given twice"},
		{"inode past the next", func(s *state) { s.nodes[1].Ino = s.nextIno + 1 }, "given twice"},
		{"a directory with contents", func(s *state) { s.nodes[1].Data = []byte("x") }, "a directory with contents"},
		{"pipe overfull", func(s *state) { s.pipes[0].Buf = make([]byte, PipeCapacity+1) }, "pipe 0"},
		{"pipe capacity", func(s *state) { s.pipes[0].Capacity = 12345 }, "pipe 0"},
		{"pipe readers", func(s *state) { s.pipes[0].Readers = -1 }, "pipe 0"},
		{"file's node", func(s *state) { s.files[3].Node = 99 }, "open file 3"},
		{"file's pipe", func(s *state) { s.files[3].Pipe = 5 }, "open file 3"},
		{"negative offset", func(s *state) { s.files[3].Off = -1 }, "open file 3"},
		{"two kinds", func(s *state) { s.files[3].Console = true }, "2 kinds"},
		{"no kind", func(s *state) { s.files[3].Pipe = -1 }, "0 kinds"},
		{"descriptor", func(s *state) { s.fds[7] = SavedFD{File: 99} }, "open file 99"},
		{"a directory that links", func(s *state) { s.nodes[0].Link = "/x" }, "symbolic link"},
		{"host type", func(s *state) { s.nodes[firstFile(s)].Other = 0o170000 }, "host file type"},
		{"host path", func(s *state) { s.nodes[0].Host = &SavedHost{Path: "etc"} }, "host file"},
		{"names asked of a file", func(s *state) { s.nodes[firstFile(s)].Host = &SavedHost{Path: "/f", Asked: []string{"x"}} }, "names asked"},
		{"a name asked", func(s *state) { s.nodes[0].Host = &SavedHost{Path: "/", Asked: []string{"a/b"}} }, "name"},
		{"descriptor number", func(s *state) { s.fds[MaxFDs] = SavedFD{} }, "descriptor 4096"},
		{"socket family", func(s *state) { firstSocket(s).Family = unix.AF_PACKET }, "family 17"},
		{"internet datagram socket", func(s *state) { firstSocket(s).Family = unix.AF_INET }, "type 2"},
		{"socket type", func(s *state) { firstSocket(s).Type = 9 }, "type 9"},
		{"socket overfull", func(s *state) {
			sock := lastSocket(s)
			sock.Buf, sock.Msgs = make([]byte, SocketCapacity), []int{SocketCapacity}
		}, "buffered"},
		{"socket messages not its bytes", func(s *state) { lastSocket(s).Msgs = []int{3} }, "messages of 3 bytes"},
		{"socket peer not back", func(s *state) {
			s.sockets = append(s.sockets, SavedSocket{Family: unix.AF_UNIX, Type: unix.SOCK_DGRAM, Peer: 0})
		}, "not a socket connected back"},
		{"socket peer itself", func(s *state) { firstSocket(s).Peer = 0 }, "peer"},
		{"socket opened twice", func(s *state) { s.files[fileOf(s, lastSocket(s))].Socket = s.files[fileOf(s, firstSocket(s))].Socket }, "open file"},
		{"abstract name twice", func(s *state) {
			for _, sock := range sockets(s) {
				sock.Bound, sock.Name = true, "\x00same"
			}
		}, `the abstract name "same" twice`},
		{"listening and connected", func(s *state) { firstSocket(s).Listening = true }, "listening, connected or unbound"},
		{"backlog not listening", func(s *state) { firstSocket(s).Backlog = []int{1} }, "a backlog of 1"},
		{"socket option", func(s *state) { firstSocket(s).Options = map[int]int32{unix.SO_TYPE: 1} }, "option 0x3"},
		{"listing order short", func(s *state) { s.nodes[0].Order = s.nodes[0].Order[1:] }, "an order of"},
		{"listing order of no entry", func(s *state) { s.nodes[0].Order[0] = "nope" }, `"nope" in the order`},
		{"seals of a plain file", func(s *state) { s.nodes[firstFile(s)].Seals = 2 }, "a memfd (false) with seals 0x2"},
		{"unknown seal", func(s *state) { n := &s.nodes[firstFile(s)]; n.MemFD, n.Seals = true, 0x100 }, "seals 0x100"},
		{"door on a datagram socket", func(s *state) { firstSocket(s).Door = &SavedDoorConn{Conn: 1} }, "not a TCP stream's"},
		{"door window overrun", func(s *state) {
			s.sockets = append(s.sockets, SavedSocket{Family: unix.AF_INET, Type: unix.SOCK_STREAM, Peer: -1,
				Door: &SavedDoorConn{Conn: 1, Sent: 1 << 20, Unacked: door.Room + 1}})
		}, "door connection 1 with 212993 bytes unacknowledged"},
		{"door acknowledges more than sent", func(s *state) {
			s.sockets = append(s.sockets, SavedSocket{Family: unix.AF_INET, Type: unix.SOCK_STREAM, Peer: -1,
				Door: &SavedDoorConn{Conn: 1, Sent: 10, Unacked: 11}})
		}, "11 bytes unacknowledged of 10"},
		{"door connection twice", func(s *state) {
			for range 2 {
				s.sockets = append(s.sockets, SavedSocket{Family: unix.AF_INET6, Type: unix.SOCK_STREAM, Peer: -1, Door: &SavedDoorConn{Conn: 7}})
			}
		}, "door connection 7 twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := save(fs, fds)
			tc.forge(&s)
			err := Check(s.nodes, s.nextIno, s.pipes, s.files, s.sockets)
			if err == nil {
				err = CheckFDs(s.fds, len(s.files))
			}
			require.ErrorContains(t, err, tc.want)
		})
	}

	// A device is restored by name, from the fresh tree's: one it has
	// not is refused; so is a host file's contents with no host to read
	// them from.
	fresh, _ := tree(t)
	s := save(fs, fds)
	s.nodes[len(s.nodes)-1].Device = "tape0"
	_, err = Restore(fresh, s.nodes, s.nextIno, s.pipes, s.files, s.sockets, nil, nil, nil)
	require.ErrorContains(t, err, `no device "tape0"`)
	s = save(fs, fds)
	for i := range s.nodes {
		if !s.nodes[i].Dir {
			s.nodes[i].Data, s.nodes[i].Written = nil, false
			s.nodes[i].Host = &SavedHost{Path: "/etc/hostname", Size: 5, Loaded: true}
			break
		}
	}
	require.NoError(t, Check(s.nodes, s.nextIno, s.pipes, s.files, s.sockets))
	_, err = Restore(fresh, s.nodes, s.nextIno, s.pipes, s.files, s.sockets, nil, nil, nil)
	require.ErrorContains(t, err, "no host to read it from")
}

// A file with two names is one node in a checkpoint, named by both
// entries; restored, it has both links, and removing one leaves the other.
func TestHardLinksSaveRestore(t *testing.T) {
	fs, b := tree(t)
	n, err := fs.Add("/tmp/x", []byte("data"), 0o644)
	require.NoError(t, err)
	n.Written = true
	e, err := fs.Parent("/etc/y")
	require.NoError(t, err)
	require.NoError(t, fs.Link(n, e))
	require.Equal(t, 2, n.Links())
	dir, err := fs.Parent("/etc/passwd")
	require.NoError(t, err)
	require.Equal(t, unix.EEXIST, fs.Link(n, dir), "an existing name")
	root, _ := fs.Lookup("/tmp")
	require.Equal(t, unix.EPERM, fs.Link(root, Entry{Dir: fs.Root(), Name: "t2"}), "a directory")

	console := NewConsole(&bytes.Buffer{})
	_, restored := roundTrip(t, fs, b, NewFDTable(console), console)
	x, err := restored.FS.Lookup("/tmp/x")
	require.NoError(t, err)
	y, err := restored.FS.Lookup("/etc/y")
	require.NoError(t, err)
	require.Same(t, x, y, "one node under both names")
	require.Equal(t, 2, x.Links())
	e, err = restored.FS.Parent("/tmp/x")
	require.NoError(t, err)
	require.NoError(t, restored.FS.Remove(e, false))
	require.Equal(t, 1, y.Links())
	require.Equal(t, "data", string(y.Contents()), "the other name keeps the file")
}

// firstFile is the index of the first saved node that is not a directory.
// firstSocket and lastSocket are the saved state's first and last
// sockets; fileOf the index of the saved open file a socket is.
func firstSocket(s *state) *SavedSocket { return sockets(s)[0] }
func lastSocket(s *state) *SavedSocket  { l := sockets(s); return l[len(l)-1] }

func sockets(s *state) []*SavedSocket {
	var out []*SavedSocket
	for i := range s.sockets {
		out = append(out, &s.sockets[i])
	}
	return out
}

func fileOf(s *state, sock *SavedSocket) int {
	for i, f := range s.files {
		if f.Socket >= 0 && &s.sockets[f.Socket] == sock {
			return i
		}
	}
	panic("no such socket")
}

func firstFile(s *state) int {
	for i, n := range s.nodes {
		if !n.Dir {
			return i
		}
	}
	panic("no file")
}
