package vfs

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"
)

// TimerFD is a timerfd: a timer on the program's monotonic clock (a
// realtime timer is converted by its caller, the clock's epoch being
// fixed) and the expirations not yet read. It has no clock of its own:
// the kernel calls Expire at each tick with the clock's time, so it
// expires where the recording's did (up to a tick after its time).
type TimerFD struct {
	notTTY
	Clock        int           // the clock it was created on (CLOCK_MONOTONIC ...)
	at, interval time.Duration // when it expires next, 0: disarmed; its period
	expirations  uint64
	released     bool
	queue        Queue
}

// NewTimerFD opens a disarmed timerfd on clock, with timerfd_create's
// TFD_NONBLOCK (TFD_CLOEXEC is the descriptor's).
func NewTimerFD(clock int, flags uint64) (*OpenFile, *TimerFD) {
	tf := &TimerFD{Clock: clock}
	return NewOpenFile(tf, "anon_inode:[timerfd]", unix.O_RDWR|flags&unix.O_NONBLOCK), tf
}

// TimerFDOf is f's timerfd, or nil if f is not one.
func TimerFDOf(f *OpenFile) *TimerFD {
	tf, _ := f.impl.(*TimerFD)
	return tf
}

// Set arms the timer to expire at at (0 disarms it) and every interval
// after; expirations not yet read are dropped, as timerfd_settime drops
// them. It returns what the timer was set to.
func (tf *TimerFD) Set(at, interval time.Duration) (oldAt, oldInterval time.Duration) {
	oldAt, oldInterval = tf.at, tf.interval
	tf.at, tf.interval, tf.expirations = at, interval, 0
	if at == 0 {
		tf.interval = 0
	}
	return oldAt, oldInterval
}

// Setting is when the timer expires next (0: disarmed) and its period.
func (tf *TimerFD) Setting() (at, interval time.Duration) { return tf.at, tf.interval }

// Expire counts the expirations due by now and wakes the timer's readers;
// it reports whether the timer is still of use to tick (armed, open).
func (tf *TimerFD) Expire(now time.Duration) bool {
	if tf.released {
		return false
	}
	if tf.at == 0 || now < tf.at {
		return true
	}
	n := uint64(1)
	if tf.interval > 0 {
		n += uint64((now - tf.at) / tf.interval)
		tf.at += time.Duration(n) * tf.interval
	} else {
		tf.at = 0
	}
	tf.expirations += n
	tf.queue.Notify(EventIn)
	return true
}

// Closed reports whether no descriptor refers to the timer any more.
func (tf *TimerFD) Closed() bool { return tf.released }

// Read takes the expirations as 8 bytes; none waits (EAGAIN non-blocking).
func (tf *TimerFD) Read(f *OpenFile, b []byte, _ int64) (int, error) {
	switch {
	case len(b) < 8:
		return 0, unix.EINVAL
	case tf.expirations == 0 && f.nonblocking():
		return 0, unix.EAGAIN
	case tf.expirations == 0:
		return 0, ErrWouldBlock
	}
	binary.LittleEndian.PutUint64(b, tf.expirations)
	tf.expirations = 0
	return 8, nil
}

func (*TimerFD) Write(*OpenFile, []byte, int64) (int, error)   { return 0, unix.EINVAL }
func (*TimerFD) Seek(*OpenFile, int64, uint64) (uint64, error) { return 0, unix.ESPIPE }
func (*TimerFD) Node() *Node                                   { return nil }
func (tf *TimerFD) Queue() *Queue                              { return &tf.queue }
func (tf *TimerFD) Release()                                   { tf.released = true }

// Readiness: readable with expirations to read.
func (tf *TimerFD) Readiness() Events {
	if tf.expirations > 0 {
		return EventIn
	}
	return 0
}
