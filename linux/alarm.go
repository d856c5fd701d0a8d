package linux

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"
)

// A process's real-time timer (alarm, setitimer ITIMER_REAL) fires at the
// first tick at or past its time, which sends SIGALRM; an interval rearms
// it. Ticks are the engine's, so a replay fires it where the recording did.

// realTimer is a process's ITIMER_REAL: when it fires next (0: disarmed)
// and its interval.
type realTimer struct {
	at, interval time.Duration
}

// setRealTimer arms the process's timer to fire after value (0: disarm)
// and every interval after, and returns what was left of the old one.
func (t *thread) setRealTimer(value, interval time.Duration) (realTimer, error) {
	old, err := t.realTimerLeft()
	if err != nil {
		return old, err
	}
	p := t.proc
	p.timer = realTimer{}
	if value > 0 {
		now, err := t.k.now(unix.CLOCK_MONOTONIC)
		if err != nil {
			return old, err
		}
		p.timer = realTimer{at: now + value, interval: interval}
	}
	return old, nil
}

// realTimerLeft is the process's timer with at made relative to now.
func (t *thread) realTimerLeft() (realTimer, error) {
	left := t.proc.timer
	if left.at == 0 {
		return left, nil
	}
	now, err := t.k.now(unix.CLOCK_MONOTONIC)
	if err != nil {
		return left, err
	}
	left.at = max(left.at-now, time.Microsecond)
	return left, nil
}

// fireTimers sends SIGALRM to each process whose timer is due at clock,
// fires the processes' POSIX timers, and counts the timerfds' expirations.
func (k *Kernel) fireTimers(clock time.Duration) error {
	k.expireTimerfds(clock)
	seen := map[*process]bool{}
	for _, t := range k.threads {
		p := t.proc
		if t.state == exited || seen[p] {
			continue
		}
		seen[p] = true
		if err := k.firePosixTimers(p, clock); err != nil {
			return err
		}
		if p.timer.at == 0 || clock < p.timer.at {
			continue
		}
		p.timer.at = 0
		if p.timer.interval > 0 {
			p.timer.at = clock + p.timer.interval
		}
		sig := uint64(unix.SIGALRM)
		if err := k.signal(t, sig, k.siginfo(sig, 0x80, 0)); err != nil { // SI_KERNEL
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
