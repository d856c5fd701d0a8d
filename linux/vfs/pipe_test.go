package vfs

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// waiter counts the changes it is told of.
type waiter struct{ told []Events }

func (w *waiter) Notify(e Events) { w.told = append(w.told, e) }

func TestPipe(t *testing.T) {
	b := &Budget{}
	r, w, err := NewPipe(b, 0, 0)
	require.NoError(t, err)
	require.EqualValues(t, PipeCapacity, b[PipeBytes])
	buf := make([]byte, PipeCapacity+10)

	_, err = r.Read(buf, 0)
	require.Equal(t, ErrWouldBlock, err, "empty, with a writer")
	require.Equal(t, EventOut, w.Readiness(EventIn|EventOut))
	require.Zero(t, r.Readiness(EventIn|EventOut))

	var blocked waiter
	r.Queue().Register(&blocked, AllEvents)
	n, err := w.Write(buf, 0)
	require.NoError(t, err)
	require.Equal(t, PipeCapacity, n, "what fits")
	require.Equal(t, []Events{EventIn}, blocked.told)
	_, err = w.Write(buf, 0)
	require.Equal(t, ErrWouldBlock, err, "full")
	w.Flags |= unix.O_NONBLOCK
	_, err = w.Write(buf, 0)
	require.Equal(t, unix.EAGAIN, err, "full, non-blocking")
	require.Equal(t, EventIn, r.Readiness(EventIn))
	require.Zero(t, w.Readiness(EventOut))

	n, err = r.Read(buf[:10], 0)
	require.NoError(t, err)
	require.Equal(t, 10, n)
	w.Release()
	require.Equal(t, EventIn|EventHup, r.Readiness(EventIn))
	n, err = r.Read(buf, 0)
	require.NoError(t, err)
	require.Equal(t, PipeCapacity-10, n, "what is left, after the writer closed")
	n, err = r.Read(buf, 0)
	require.NoError(t, err)
	require.Zero(t, n, "end of file")

	r2, w2, err := NewPipe(b, 0, 0)
	require.NoError(t, err)
	r2.Release()
	_, err = w2.Write(buf[:1], 0)
	require.Equal(t, ErrNoReaders, err, "EPIPE: no readers")
	require.Equal(t, EventOut|EventErr, w2.Readiness(EventOut))
	r.Release()
	w2.Release()
	require.Zero(t, b[PipeBytes], "both pipes closed")
}

// Past the soft limit a pipe is small; past the hard one, ENFILE.
func TestPipeBudget(t *testing.T) {
	b := &Budget{}
	b[PipeBytes] = pipeSoftBytes
	r, _, err := NewPipe(b, unix.O_NONBLOCK, 0)
	require.NoError(t, err)
	require.Equal(t, SmallPipeCapacity, r.impl.(*PipeEnd).p.capacity)
	require.NotZero(t, r.Flags&unix.O_NONBLOCK)
	b[PipeBytes] = MaxPipeBytes
	_, _, err = NewPipe(b, 0, 0)
	require.Equal(t, unix.ENFILE, err)
}

func TestQueue(t *testing.T) {
	var q Queue
	var in, out waiter
	q.Register(&in, EventIn)
	q.Register(&out, EventOut)
	q.Register(&out, EventHup) // widens
	require.Equal(t, 2, q.Waiting())
	q.Notify(EventOut)
	require.Empty(t, in.told)
	require.Equal(t, []Events{EventOut}, out.told)
	q.Notify(EventHup | EventIn)
	require.Len(t, in.told, 1)
	require.Len(t, out.told, 2)
	q.Unregister(&out)
	q.Notify(AllEvents)
	require.Len(t, out.told, 2)
	require.Len(t, in.told, 2)
}

func TestDevices(t *testing.T) {
	fs := New(&Budget{}, nil)
	require.NoError(t, fs.AddSystem(fixedEntropy(7), 4, map[string]string{"/etc/hostname": "h\n"}))
	buf := make([]byte, 8)
	for _, tc := range []struct {
		path string
		want []byte
	}{
		{"/dev/null", []byte{}},
		{"/dev/zero", make([]byte, 8)},
		{"/dev/urandom", []byte{7, 7, 7, 7}},
		{"/etc/hostname", []byte("h\n")},
	} {
		n, err := fs.Lookup(tc.path)
		require.NoError(t, err, tc.path)
		f := fs.Open(n, tc.path, unix.O_RDWR)
		copy(buf, "xxxxxxxx")
		got, err := f.Read(buf, 0)
		require.NoError(t, err)
		require.Equal(t, tc.want, buf[:got], tc.path)
		off, err := f.Lseek(5, unix.SEEK_SET)
		require.NoError(t, err)
		if n.IsDevice() {
			require.Zero(t, off, "a device's offset stays 0")
		}
	}
	null, _ := fs.Lookup("/dev/null")
	require.True(t, null.IsDevice())
}

type fixedEntropy byte

func (e fixedEntropy) Entropy(b []byte) error {
	for i := range b {
		b[i] = byte(e)
	}
	return nil
}
