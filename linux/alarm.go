package linux

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	register(unix.SYS_ALARM, "alarm", 1, sysAlarm)
	register(unix.SYS_SETITIMER, "setitimer", 3, sysSetitimer)
	register(unix.SYS_GETITIMER, "getitimer", 2, sysGetitimer)
}

// A process's real-time timer (alarm, setitimer ITIMER_REAL) fires at the
// first tick at or past its time, which sends SIGALRM; an interval rearms
// it. Ticks are the engine's, so a replay fires it where the recording did.

// realTimer is a process's ITIMER_REAL: when it fires next (0: disarmed)
// and its interval.
type realTimer struct {
	at, interval time.Duration
}

// sysAlarm arms the timer in whole seconds, an unsigned int: the
// argument's upper bits are not Linux's to read.
func sysAlarm(k *Kernel, a args) (uint64, error) {
	old, err := k.setRealTimer(time.Duration(uint32(a[0]))*time.Second, 0)
	if err != nil {
		return 0, err
	}
	return uint64((old.at + time.Second - 1) / time.Second), nil // seconds left, rounded up
}

func sysSetitimer(k *Kernel, a args) (uint64, error) {
	if a[0] != unix.ITIMER_REAL {
		return 0, unix.EINVAL // virtual and profiling timers: CPU time is not tracked
	}
	var b [32]byte
	if err := k.proc().as.read(a[1], b[:]); err != nil {
		return 0, memErr(err)
	}
	interval, value := timeval(b[:16]), timeval(b[16:])
	if interval < 0 || value < 0 {
		return 0, unix.EINVAL
	}
	old, err := k.setRealTimer(value, interval)
	if err != nil {
		return 0, err
	}
	if a[2] != 0 {
		return 0, memErr(k.proc().as.write(a[2], itimerval(old)))
	}
	return 0, nil
}

func sysGetitimer(k *Kernel, a args) (uint64, error) {
	if a[0] != unix.ITIMER_REAL {
		return 0, unix.EINVAL
	}
	left, err := k.realTimerLeft()
	if err != nil {
		return 0, err
	}
	return 0, memErr(k.proc().as.write(a[1], itimerval(left)))
}

// setRealTimer arms the process's timer to fire after value (0: disarm)
// and every interval after, and returns what was left of the old one.
func (k *Kernel) setRealTimer(value, interval time.Duration) (realTimer, error) {
	old, err := k.realTimerLeft()
	if err != nil {
		return old, err
	}
	p := k.proc()
	p.timer = realTimer{}
	if value > 0 {
		now, err := k.now(unix.CLOCK_MONOTONIC)
		if err != nil {
			return old, err
		}
		p.timer = realTimer{at: now + value, interval: interval}
	}
	return old, nil
}

// realTimerLeft is the process's timer with at made relative to now.
func (k *Kernel) realTimerLeft() (realTimer, error) {
	t := k.proc().timer
	if t.at == 0 {
		return t, nil
	}
	now, err := k.now(unix.CLOCK_MONOTONIC)
	if err != nil {
		return t, err
	}
	t.at = max(t.at-now, time.Microsecond)
	return t, nil
}

// fireTimers sends SIGALRM to each process whose timer is due at clock.
func (k *Kernel) fireTimers(clock time.Duration) error {
	for _, t := range k.threads {
		p := t.proc
		if t.state == exited || p.timer.at == 0 || clock < p.timer.at {
			continue
		}
		p.timer.at = 0
		if p.timer.interval > 0 {
			p.timer.at = clock + p.timer.interval
		}
		sig := uint64(unix.SIGALRM)
		if err := k.signal(t, sig, siginfo(sig, 0x80, 0)); err != nil { // SI_KERNEL
			return err
		}
	}
	return nil
}

// timeval reads a struct timeval, cut to maxWait; -1 if Linux refuses it.
func timeval(b []byte) time.Duration {
	sec, usec := int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))
	if sec < 0 || usec < 0 || usec >= 1e6 {
		return -1
	}
	return waitOf(sec, usec*1000)
}

func itimerval(t realTimer) []byte {
	b := make([]byte, 32)
	for i, d := range []time.Duration{t.interval, t.at} {
		binary.LittleEndian.PutUint64(b[i*16:], uint64(d/time.Second))
		binary.LittleEndian.PutUint64(b[i*16+8:], uint64(d%time.Second/time.Microsecond))
	}
	return b
}
