package vfs

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func TestEventFD(t *testing.T) {
	f := NewEventFD(2, 0)
	require.Equal(t, EventIn|EventOut, f.Readiness(EventIn|EventOut))
	b := make([]byte, 8)
	_, err := f.Read(b[:7], 0)
	require.Equal(t, unix.EINVAL, err, "fewer than 8 bytes")
	n, err := f.Read(b, 0)
	require.NoError(t, err)
	require.Equal(t, 8, n)
	require.EqualValues(t, 2, binary.LittleEndian.Uint64(b), "the whole count")
	_, err = f.Read(b, 0)
	require.Equal(t, ErrWouldBlock, err, "zero: a reader waits")

	var w waiter
	f.Queue().Register(&w, AllEvents)
	_, err = f.Write(u64(1<<64-1), 0)
	require.Equal(t, unix.EINVAL, err, "2^64-1 is never written")
	_, err = f.Write(u64(eventMax), 0)
	require.NoError(t, err)
	require.Equal(t, []Events{EventIn}, w.told)
	require.Equal(t, EventIn, f.Readiness(EventIn|EventOut), "full: not writable")
	_, err = f.Write(u64(1), 0)
	require.Equal(t, ErrWouldBlock, err, "past the most it holds")
	f.Flags |= unix.O_NONBLOCK
	_, err = f.Write(u64(1), 0)
	require.Equal(t, unix.EAGAIN, err)

	sem := NewEventFD(3, unix.EFD_SEMAPHORE|unix.EFD_NONBLOCK)
	for range 3 {
		_, err = sem.Read(b, 0)
		require.NoError(t, err)
		require.EqualValues(t, 1, binary.LittleEndian.Uint64(b), "a semaphore takes one")
	}
	_, err = sem.Read(b, 0)
	require.Equal(t, unix.EAGAIN, err)
}

// epollFixture is an epoll instance watching the read end of a pipe.
func epollFixture(t *testing.T, events uint32) (b *Budget, epf, r, w *OpenFile, ep *Epoll) {
	t.Helper()
	b = &Budget{}
	epf = NewEpoll(b)
	ep = EpollOf(epf)
	r, w, err := NewPipe(b, 0, 0)
	require.NoError(t, err)
	require.NoError(t, ep.Add(r, 3, events, 0xabc))
	require.EqualValues(t, 1, b[Watches])
	return b, epf, r, w, ep
}

func TestEpollLevelTriggered(t *testing.T) {
	_, epf, r, w, ep := epollFixture(t, unix.EPOLLIN)
	require.Empty(t, ep.Wait(8), "an empty pipe")
	var waiting waiter
	epf.Queue().Register(&waiting, AllEvents)
	_, err := w.Write([]byte("ab"), 0)
	require.NoError(t, err)
	require.Equal(t, []Events{EventIn}, waiting.told, "a waiter on the instance is woken")
	require.Equal(t, EventIn, epf.Readiness(EventIn), "the instance itself polls readable")
	want := []EpollEvent{{unix.EPOLLIN, 0xabc}}
	require.Equal(t, want, ep.Wait(8))
	require.Equal(t, want, ep.Wait(8), "level-triggered: reported while readable")
	_, err = r.Read(make([]byte, 2), 0)
	require.NoError(t, err)
	require.Empty(t, ep.Wait(8), "drained")
	require.Zero(t, epf.Readiness(EventIn))
}

func TestEpollEdgeTriggeredAndOneShot(t *testing.T) {
	_, _, _, w, ep := epollFixture(t, unix.EPOLLIN|EpollET)
	_, err := w.Write([]byte("a"), 0)
	require.NoError(t, err)
	require.Len(t, ep.Wait(8), 1)
	require.Empty(t, ep.Wait(8), "edge-triggered: once per change")
	_, err = w.Write([]byte("b"), 0)
	require.NoError(t, err)
	require.Len(t, ep.Wait(8), 1, "a new write is a new edge")

	_, _, r, w, ep := epollFixture(t, unix.EPOLLIN|EpollOneShot)
	_, err = w.Write([]byte("a"), 0)
	require.NoError(t, err)
	require.Len(t, ep.Wait(8), 1)
	_, err = w.Write([]byte("b"), 0)
	require.NoError(t, err)
	require.Empty(t, ep.Wait(8), "one-shot: disabled once reported")
	require.NoError(t, ep.Modify(r, 3, unix.EPOLLIN|EpollOneShot, 7))
	require.Equal(t, []EpollEvent{{unix.EPOLLIN, 7}}, ep.Wait(8), "re-armed by EPOLL_CTL_MOD, ready at once")
}

// Closing the write end reports a hang-up, asked for or not; the last
// reference of a watched file going removes its item, as on Linux.
func TestEpollHangupAndClose(t *testing.T) {
	b, epf, r, w, ep := epollFixture(t, unix.EPOLLOUT)
	fds := FDTable{}
	_, err := fds.Install(r, false, 3)
	require.NoError(t, err)
	_, err = fds.Install(w, false, 4)
	require.NoError(t, err)
	fds.Close(4)
	require.Equal(t, []EpollEvent{{unix.EPOLLHUP, 0xabc}}, ep.Wait(8))
	fds.Close(3)
	require.False(t, ep.Watched(r, 3))
	require.Zero(t, b[Watches])
	require.Empty(t, ep.Wait(8))
	require.Zero(t, r.Queue().Waiting(), "the item left the pipe's queue")
	epf.Release()
}

func TestEpollErrors(t *testing.T) {
	b, epf, r, _, ep := epollFixture(t, unix.EPOLLIN)
	require.Equal(t, unix.EEXIST, ep.Add(r, 3, unix.EPOLLIN, 0))
	require.NoError(t, ep.Add(r, 4, unix.EPOLLIN, 0), "the same file by another descriptor is another item")
	require.Equal(t, unix.ENOENT, ep.Modify(r, 5, unix.EPOLLIN, 0))
	require.Equal(t, unix.ENOENT, ep.Delete(r, 5))
	require.NoError(t, ep.Delete(r, 4))

	// Instances that would watch one another, or nest too deep.
	outer := NewEpoll(b)
	require.NoError(t, EpollOf(outer).Add(epf, 9, unix.EPOLLIN, 0))
	require.Equal(t, unix.ELOOP, ep.Add(outer, 10, unix.EPOLLIN, 0), "a cycle")
	// epf and outer are two levels; Linux allows five.
	inner := outer
	for level := 3; level <= maxEpollNesting+1; level++ {
		next := NewEpoll(b)
		require.NoError(t, EpollOf(next).Add(inner, 1, unix.EPOLLIN, 0), "level %d", level)
		inner = next
	}
	require.Equal(t, unix.ELOOP, EpollOf(NewEpoll(b)).Add(inner, 1, unix.EPOLLIN, 0), "a sixth level")

	fs, _ := tree(t)
	n, _ := fs.Lookup("/etc/passwd")
	require.False(t, Pollable(fs.Open(n, "/etc/passwd", unix.O_RDONLY)), "a regular file: EPERM")
	b[Watches] = MaxWatches
	require.Equal(t, unix.ENOSPC, ep.Add(r, 6, unix.EPOLLIN, 0), "past max_user_watches")
}

// An epoll instance and an eventfd survive a checkpoint: items, ready
// list and counts; a forged instance is refused.
func TestEpollSaveRestore(t *testing.T) {
	fs, b := tree(t)
	console := NewConsole(&bytes.Buffer{})
	fds := NewFDTable(console)
	epf := NewEpoll(b)
	ev := NewEventFD(5, unix.EFD_SEMAPHORE)
	r, w, err := NewPipe(b, 0, 0)
	require.NoError(t, err)
	for _, f := range []*OpenFile{epf, ev, r, w} {
		_, err := fds.Install(f, false, 0)
		require.NoError(t, err)
	}
	ep := EpollOf(epf)
	require.NoError(t, ep.Add(ev, 4, unix.EPOLLIN, 1))
	require.NoError(t, ep.Add(r, 5, unix.EPOLLIN|EpollET, 2))
	require.NoError(t, ep.Add(fds[1].File, 1, unix.EPOLLOUT, 3))
	_, err = w.Write([]byte("x"), 0)
	require.NoError(t, err)

	s, restored := roundTrip(t, fs, b, fds, console)
	rfds := restored.FDs(s.fds)
	require.Equal(t, s, save(restored.FS, rfds), "restored, then saved again: the same state")
	rep := EpollOf(rfds[3].File)
	want := ep.Wait(8)
	require.Equal(t, want, rep.Wait(8), "the same items, ready in the same order")
	require.Len(t, want, 3)

	// The instance's and the eventfd's places among the saved files.
	epi, evi := -1, -1
	for i, f := range s.files {
		switch {
		case f.Epoll != nil:
			epi = i
		case f.EventFD != nil:
			evi = i
		}
	}
	items := func(s *state) []SavedEpollItem { return s.files[epi].Epoll.Items }
	for _, tc := range []struct {
		name  string
		forge func(s *state)
		want  string
	}{
		{"item of itself", func(s *state) { items(s)[0].File = epi }, "item of file"},
		{"item of no file", func(s *state) { items(s)[0].File = 99 }, "item of file 99"},
		{"item twice", func(s *state) { items(s)[1] = items(s)[0] }, "item of file"},
		{"ready twice", func(s *state) { s.files[epi].Epoll.Ready = []int{0, 0} }, "ready item 0"},
		{"eventfd past its most", func(s *state) { s.files[evi].EventFD.Count = 1<<64 - 1 }, "an eventfd counting"},
		{"timerfd before time", func(s *state) {
			s.files[evi] = SavedFile{Node: -1, Pipe: -1, Socket: -1, TimerFD: &SavedTimerFD{At: -1}}
		}, "a timerfd at"},
		{"two kinds", func(s *state) { s.files[evi].Console = true }, "2 kinds"},
		{"a cycle", func(s *state) {
			s.files[evi] = SavedFile{Node: -1, Pipe: -1, Socket: -1, Epoll: &SavedEpoll{Items: []SavedEpollItem{{File: epi, FD: 9}}}}
			items(s)[0].File = evi
		}, "watches itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := save(fs, fds)
			tc.forge(&s)
			require.ErrorContains(t, Check(s.nodes, s.nextIno, s.pipes, s.files, s.sockets), tc.want)
		})
	}
}

// A timerfd counts the expirations due at each tick it is given, periodic
// ones included, wakes its readers, and drops them when set again.
func TestTimerFD(t *testing.T) {
	f, tf := NewTimerFD(unix.CLOCK_MONOTONIC, unix.O_NONBLOCK)
	b := make([]byte, 8)
	_, err := f.Read(b, 0)
	require.Equal(t, unix.EAGAIN, err, "disarmed")
	var w waiter
	f.Queue().Register(&w, AllEvents)
	tf.Set(10*time.Millisecond, 4*time.Millisecond)
	require.True(t, tf.Expire(9*time.Millisecond))
	require.Empty(t, w.told, "not yet due")
	require.True(t, tf.Expire(19*time.Millisecond)) // due at 10, 14, 18
	require.Equal(t, []Events{EventIn}, w.told)
	require.Equal(t, EventIn, f.Readiness(EventIn))
	at, interval := tf.Setting()
	require.Equal(t, 22*time.Millisecond, at, "the next period")
	require.Equal(t, 4*time.Millisecond, interval)
	n, err := f.Read(b, 0)
	require.NoError(t, err)
	require.Equal(t, 8, n)
	require.EqualValues(t, 3, binary.LittleEndian.Uint64(b))
	tf.Expire(30 * time.Millisecond)
	tf.Set(0, time.Second)
	_, err = f.Read(b, 0)
	require.Equal(t, unix.EAGAIN, err, "set again: the expirations not read are dropped")
	at, interval = tf.Setting()
	require.Zero(t, at+interval, "disarmed, period and all")
	f.Release()
	require.False(t, tf.Expire(time.Hour), "closed: no longer ticked")
}
