package vfs

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pair is a connected pair of sockets of type typ, nonblocking.
func pair(t *testing.T, b *Budget, typ SockType) (*Socket, *Socket) {
	t.Helper()
	x, y, err := NewSocketPair(b, unix.AF_UNIX, typ, unix.O_NONBLOCK, [3]uint32{}, 1)
	require.NoError(t, err)
	return SocketOf(x), SocketOf(y)
}

// Files passed on a stream arrive with the receive that takes the first
// byte sent with them: a receive stops before them once it has bytes; a
// send of no bytes passes none (else a program could queue references
// without end); closing the receiver drops the references in flight.
func TestStreamRightsArriveWithTheirBytes(t *testing.T) {
	var b Budget
	x, y := pair(t, &b, unix.SOCK_STREAM)
	r, w, err := NewPipe(&b, 0, 9)
	require.NoError(t, err)
	r.Refs, w.Refs = 1, 1
	_, err = x.Send([]byte("plain "), true)
	require.NoError(t, err)
	_, err = x.SendRights([]byte("with"), []*OpenFile{r}, true)
	require.NoError(t, err)
	n, err := x.SendRights(nil, []*OpenFile{w}, true)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, 1, w.Refs, "no bytes, no files passed")

	buf := make([]byte, 64)
	got, _, files, err := y.RecvRights(buf, false, true)
	require.NoError(t, err)
	require.Equal(t, "plain ", string(buf[:got]), "up to the bytes sent with files")
	require.Empty(t, files)
	got, _, files, err = y.RecvRights(buf, false, true)
	require.NoError(t, err)
	require.Equal(t, "with", string(buf[:got]))
	require.Equal(t, []*OpenFile{r}, files)
	require.Equal(t, 2, r.Refs, "its descriptor's and the one it came with")
	DropRefs(files)

	_, err = x.SendRights([]byte("again"), []*OpenFile{r}, true)
	require.NoError(t, err)
	y.Release()
	require.Equal(t, 1, r.Refs, "the receiver closed: the reference in flight is dropped")
}

// Empty datagrams still fill a buffer (each costs its overhead), so a
// flood of them meets EAGAIN rather than growing it without end; a
// message longer than a buffer can ever hold is EMSGSIZE.
func TestDatagramsFillTheBuffer(t *testing.T) {
	var b Budget
	x, _ := pair(t, &b, unix.SOCK_DGRAM)
	sent := 0
	for ; sent < SocketCapacity; sent++ {
		if _, err := x.Send(nil, true); err != nil {
			require.ErrorIs(t, err, unix.EAGAIN)
			break
		}
	}
	require.Equal(t, SocketCapacity/msgOverhead, sent)
	_, err := x.Send(make([]byte, SocketCapacity), true)
	require.ErrorIs(t, err, unix.EMSGSIZE)
}
