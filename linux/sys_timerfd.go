package linux

import (
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/linux/vfs"
)

// timerfds are the program's timerfds, in creation order: each tick
// counts their expirations (fireTimers), in this order, so a replay
// wakes their readers in the recording's.

func sysTimerfdCreate(t *thread, a args) (uint64, error) {
	switch clk := a[0]; {
	case a[1]&^(unix.TFD_CLOEXEC|unix.TFD_NONBLOCK) != 0:
		return 0, unix.EINVAL
	case clk == unix.CLOCK_REALTIME_ALARM || clk == unix.CLOCK_BOOTTIME_ALARM:
		return 0, unix.EPERM // CAP_WAKE_ALARM, which the program has not
	case clk != unix.CLOCK_REALTIME && clk != unix.CLOCK_MONOTONIC && clk != unix.CLOCK_BOOTTIME:
		return 0, unix.EINVAL
	}
	f, _ := vfs.NewTimerFD(int(a[0]), a[1])
	fd, err := t.install(f, a[1]&unix.TFD_CLOEXEC != 0)
	if err == nil {
		t.k.timerfds = append(t.k.timerfds, f)
	}
	return fd, err
}

// timerfdOf is descriptor fd's timerfd: EBADF, or EINVAL for another kind.
func (t *thread) timerfdOf(fd uint64) (*vfs.TimerFD, error) {
	f, err := t.proc.fds.Get(fd)
	if err != nil {
		return nil, err
	}
	tf := vfs.TimerFDOf(f)
	if tf == nil {
		return nil, unix.EINVAL
	}
	return tf, nil
}

func sysTimerfdSettime(t *thread, a args) (uint64, error) {
	if a[1]&^(unix.TFD_TIMER_ABSTIME|unix.TFD_TIMER_CANCEL_ON_SET) != 0 {
		return 0, unix.EINVAL
	}
	tf, err := t.timerfdOf(a[0])
	if err != nil {
		return 0, err
	}
	at, interval, now, err := t.readTimerSetting(a[2], tf.Clock, a[1]&unix.TFD_TIMER_ABSTIME != 0)
	if err != nil {
		return 0, err
	}
	oldAt, oldInterval := tf.Set(at, interval)
	if a[3] == 0 {
		return 0, nil
	}
	return 0, memErr(t.proc.as.Write(a[3], itimerspec(oldAt, oldInterval, now)))
}

func sysTimerfdGettime(t *thread, a args) (uint64, error) {
	tf, err := t.timerfdOf(a[0])
	if err != nil {
		return 0, err
	}
	at, interval := tf.Setting()
	return 0, t.writeTimer(a[1], at, interval)
}

// readTimerSetting reads the struct itimerspec at va that sets a timer on
// clock: when it expires next on the monotonic clock (0: disarmed, an
// absolute time past: the next tick; the program's realtime is its epoch
// plus the monotonic clock) and its interval, and the time now.
func (t *thread) readTimerSetting(va uint64, clock int, absolute bool) (at, interval, now time.Duration, err error) {
	interval, value, err := t.readItimerspec(va)
	if err != nil {
		return 0, 0, 0, err
	}
	if now, err = t.k.now(unix.CLOCK_MONOTONIC); err != nil {
		return 0, 0, 0, err
	}
	switch {
	case value == 0:
		return 0, 0, now, nil
	case absolute:
		at = value
		if isRealtime(uint64(clock)) {
			at -= time.Duration(t.k.prog.Epoch.UnixNano())
		}
		return max(at, time.Nanosecond), interval, now, nil
	}
	return now + value, interval, now, nil
}

// writeTimer writes a timer expiring at at every interval as the struct
// itimerspec at va: the time left.
func (t *thread) writeTimer(va uint64, at, interval time.Duration) error {
	now, err := t.k.now(unix.CLOCK_MONOTONIC)
	if err != nil {
		return err
	}
	return memErr(t.proc.as.Write(va, itimerspec(at, interval, now)))
}

// readItimerspec reads a struct itimerspec: the interval, then the value.
func (t *thread) readItimerspec(va uint64) (interval, value time.Duration, err error) {
	if interval, err = t.readTimespec(va); err != nil {
		return 0, 0, err
	}
	if value, err = t.readTimespec(va + 16); err != nil {
		return 0, 0, err
	}
	return interval, value, nil
}

// itimerspec is a timer expiring at at (0: disarmed) every interval, as
// struct itimerspec at now: the time left, at least 1 ns while armed.
func itimerspec(at, interval, now time.Duration) []byte {
	left := time.Duration(0)
	if at != 0 {
		left = max(at-now, time.Nanosecond)
	}
	return append(timespec(interval), timespec(left)...)
}

// expireTimerfds counts the timerfds' expirations due at clock, and
// forgets those no descriptor refers to any more.
func (k *Kernel) expireTimerfds(clock time.Duration) {
	k.timerfds = slices.DeleteFunc(k.timerfds, func(f *openFile) bool { return !vfs.TimerFDOf(f).Expire(clock) })
}
