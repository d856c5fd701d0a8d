package linux

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"
)

// Every time a program reads is an input: there is no vDSO, so each read
// is a system call, answered from the machine's exact clock (recorded,
// replayed). CLOCK_REALTIME is the program's epoch plus that clock.

// now is the clock clk reads now.
func (k *Kernel) now(clk uint64) (time.Duration, error) {
	t, err := k.m.Clock()
	if err != nil {
		return 0, err
	}
	k.coarse = max(k.coarse, t)
	if isRealtime(clk) {
		t += time.Duration(k.prog.Epoch.UnixNano())
	}
	return t, nil
}

// fileTime is the time a file changed now, in ns since the Unix epoch:
// the program's wall clock at the coarse reading.
func (k *Kernel) fileTime() int64 { return k.prog.Epoch.UnixNano() + int64(k.coarse) }

func isRealtime(clk uint64) bool {
	return clk == unix.CLOCK_REALTIME || clk == unix.CLOCK_REALTIME_COARSE || clk == unix.CLOCK_TAI
}

func validClock(clk uint64) bool { return clk <= unix.CLOCK_TAI && clk != 10 }

func timespec(d time.Duration) []byte {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], uint64(d/time.Second))
	binary.LittleEndian.PutUint64(b[8:], uint64(d%time.Second))
	return b[:]
}

// maxWait is what a longer timeout or sleep is cut to, as Linux cuts one
// to KTIME_MAX: 146 years, which no run reaches, and which added to any
// clock's reading stays far from overflowing.
const maxWait = time.Duration(1 << 62)

// waitOf is sec seconds and nsec nanoseconds (both valid), cut to maxWait.
func waitOf(sec, nsec int64) time.Duration {
	if sec >= int64(maxWait/time.Second) {
		return maxWait
	}
	return min(time.Duration(sec)*time.Second+time.Duration(nsec), maxWait)
}

// readTimespec reads a struct timespec: any seconds Linux's
// timespec64_valid accepts (cut to maxWait), else EINVAL.
func (t *thread) readTimespec(va uint64) (time.Duration, error) {
	var b [16]byte
	if err := t.proc.as.Read(va, b[:]); err != nil {
		return 0, memErr(err)
	}
	sec, nsec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
	if sec < 0 || nsec < 0 || nsec >= 1e9 {
		return 0, unix.EINVAL
	}
	return waitOf(sec, nsec), nil
}

func sysClockGettime(t *thread, a args) (uint64, error) {
	if !validClock(a[0]) {
		return 0, unix.EINVAL
	}
	now, err := t.k.now(a[0])
	if err != nil {
		return 0, err
	}
	return 0, memErr(t.proc.as.Write(a[1], timespec(now)))
}

func sysGettimeofday(t *thread, a args) (uint64, error) {
	if a[0] == 0 {
		return 0, nil
	}
	now, err := t.k.now(unix.CLOCK_REALTIME)
	if err != nil {
		return 0, err
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], uint64(now/time.Second))
	binary.LittleEndian.PutUint64(b[8:], uint64(now%time.Second/time.Microsecond))
	return 0, memErr(t.proc.as.Write(a[0], b[:]))
}

func sysTime(t *thread, a args) (uint64, error) {
	now, err := t.k.now(unix.CLOCK_REALTIME)
	if err != nil {
		return 0, err
	}
	s := uint64(now / time.Second)
	if a[0] != 0 {
		if err := t.proc.as.PutUint64(a[0], s); err != nil {
			return 0, memErr(err)
		}
	}
	return s, nil
}

func sysNanosleep(t *thread, a args) (uint64, error) {
	return sysClockNanosleep(t, args{unix.CLOCK_MONOTONIC, 0, a[0], a[1]})
}

// sysClockNanosleep puts the program to sleep until the clock reaches the
// deadline: it wakes at the first tick at or past it (Interrupt).
func sysClockNanosleep(t *thread, a args) (uint64, error) {
	if !validClock(a[0]) {
		return 0, unix.EINVAL
	}
	d, err := t.readTimespec(a[2])
	if err != nil {
		return 0, err
	}
	now, err := t.k.now(a[0])
	if err != nil {
		return 0, err
	}
	deadline := now + d
	if a[1]&unix.TIMER_ABSTIME != 0 {
		deadline = d
	}
	if deadline <= now {
		return 0, nil
	}
	if isRealtime(a[0]) {
		deadline -= time.Duration(t.k.prog.Epoch.UnixNano())
	}
	t.k.block(deadline, 0)
	return 0, nil
}

// maxRandom bounds one getrandom: the program asks again for more, as it
// must for a large request to Linux too.
const maxRandom = 256

func sysGetrandom(t *thread, a args) (uint64, error) {
	if a[2]&^(unix.GRND_NONBLOCK|unix.GRND_RANDOM|unix.GRND_INSECURE) != 0 {
		return 0, unix.EINVAL
	}
	n := min(a[1], maxRandom)
	if n == 0 {
		return 0, nil
	}
	b := make([]byte, n)
	if err := t.k.m.Entropy(b); err != nil {
		return 0, err
	}
	return n, memErr(t.proc.as.Write(a[0], b))
}

// sysAlarm arms the timer in whole seconds, an unsigned int: the
// argument's upper bits are not Linux's to read.
func sysAlarm(t *thread, a args) (uint64, error) {
	old, err := t.setRealTimer(time.Duration(uint32(a[0]))*time.Second, 0)
	if err != nil {
		return 0, err
	}
	return uint64((old.at + time.Second - 1) / time.Second), nil // seconds left, rounded up
}

func sysSetitimer(t *thread, a args) (uint64, error) {
	if a[0] != unix.ITIMER_REAL {
		return 0, unix.EINVAL // virtual and profiling timers: CPU time is not tracked
	}
	var b [32]byte
	if err := t.proc.as.Read(a[1], b[:]); err != nil {
		return 0, memErr(err)
	}
	interval, value := timeval(b[:16]), timeval(b[16:])
	if interval < 0 || value < 0 {
		return 0, unix.EINVAL
	}
	old, err := t.setRealTimer(value, interval)
	if err != nil {
		return 0, err
	}
	if a[2] != 0 {
		return 0, memErr(t.proc.as.Write(a[2], itimerval(old)))
	}
	return 0, nil
}

func sysGetitimer(t *thread, a args) (uint64, error) {
	if a[0] != unix.ITIMER_REAL {
		return 0, unix.EINVAL
	}
	left, err := t.realTimerLeft()
	if err != nil {
		return 0, err
	}
	return 0, memErr(t.proc.as.Write(a[1], itimerval(left)))
}
