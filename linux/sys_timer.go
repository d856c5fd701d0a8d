package linux

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"
)

// POSIX timers (timer_create and the rest): a process's timers, each
// firing at the first tick at or past its time as the process timer
// (alarm.go) does, and notifying by a signal to the process or to one of
// its threads, or not at all. A timer whose signal is still pending when
// it fires again counts an overrun instead, as Linux's does. exec and
// exit delete a process's timers; a child has none.

// posixTimer is one timer of a process.
type posixTimer struct {
	clock        int
	at, interval time.Duration // on the monotonic clock; at 0: disarmed
	notify       int           // SIGEV_SIGNAL, SIGEV_NONE, SIGEV_THREAD_ID
	signo        uint64
	value        uint64 // sigev_value, given with the signal
	tid          int    // SIGEV_THREAD_ID's thread
	// overrun is the expirations its last signal stands for, past the
	// first: the siginfo's si_overrun, kept current while the signal is
	// pending, and timer_getoverrun's answer.
	overrun int
}

// maxTimers bounds a process's POSIX timers (RLIMIT_SIGPENDING-like).
const maxTimers = 1024

// How a timer notifies (sigev_notify). SIGEV_THREAD is the C library's,
// which it makes from SIGEV_THREAD_ID.
const (
	sigevSignal   = 0
	sigevNone     = 1
	sigevThreadID = 4
)

// siTimer is si_code SI_TIMER (-2), as it is stored.
const siTimer = 1<<32 - 2

func sysTimerCreate(t *thread, a args) (uint64, error) {
	switch clk := a[0]; {
	case clk == unix.CLOCK_REALTIME_ALARM || clk == unix.CLOCK_BOOTTIME_ALARM:
		return 0, unix.EPERM
	case !validClock(clk) || clk == unix.CLOCK_MONOTONIC_RAW || clk == unix.CLOCK_REALTIME_COARSE || clk == unix.CLOCK_MONOTONIC_COARSE:
		return 0, unix.EINVAL
	}
	p := t.proc
	id := 0
	for ; id < maxTimers && p.timers[id] != nil; id++ {
	}
	if id == maxTimers {
		return 0, unix.EAGAIN
	}
	tm := &posixTimer{clock: int(a[0]), notify: sigevSignal, signo: uint64(unix.SIGALRM), value: uint64(id)}
	if a[1] != 0 {
		var ev [24]byte
		if err := p.as.Read(a[1], ev[:]); err != nil {
			return 0, memErr(err)
		}
		le := binary.LittleEndian
		tm.value, tm.signo, tm.notify = le.Uint64(ev[:]), uint64(le.Uint32(ev[8:])), int(int32(le.Uint32(ev[12:])))
		tm.tid = int(int32(le.Uint32(ev[16:])))
		switch {
		case tm.notify != sigevSignal && tm.notify != sigevNone && tm.notify != sigevThreadID:
			return 0, unix.EINVAL
		case tm.notify != sigevNone && (tm.signo == 0 || tm.signo > maxSignal):
			return 0, unix.EINVAL
		case tm.notify == sigevThreadID && t.k.threadOf(p, tm.tid) == nil:
			return 0, unix.EINVAL
		}
	}
	var out [4]byte
	binary.LittleEndian.PutUint32(out[:], uint32(id))
	if err := p.as.Write(a[2], out[:]); err != nil {
		return 0, memErr(err)
	}
	if p.timers == nil {
		p.timers = map[int]*posixTimer{}
	}
	p.timers[id] = tm
	return 0, nil
}

// threadOf is p's live thread tid, or nil.
func (k *Kernel) threadOf(p *process, tid int) *thread {
	if o := k.threadByTID(tid); o != nil && o.proc == p {
		return o
	}
	return nil
}

// timerOf is the calling process's timer id, or EINVAL.
func (t *thread) timerOf(id uint64) (*posixTimer, error) {
	tm := t.proc.timers[int(int32(id))]
	if tm == nil {
		return nil, unix.EINVAL
	}
	return tm, nil
}

func sysTimerSettime(t *thread, a args) (uint64, error) {
	tm, err := t.timerOf(a[0])
	if err != nil {
		return 0, err
	}
	if a[2] == 0 {
		return 0, unix.EINVAL
	}
	at, interval, now, err := t.readTimerSetting(a[2], tm.clock, a[1]&unix.TIMER_ABSTIME != 0)
	if err != nil {
		return 0, err
	}
	old := itimerspec(tm.at, tm.interval, now)
	tm.at, tm.interval = at, interval
	if a[3] == 0 {
		return 0, nil
	}
	return 0, memErr(t.proc.as.Write(a[3], old))
}

func sysTimerGettime(t *thread, a args) (uint64, error) {
	tm, err := t.timerOf(a[0])
	if err != nil {
		return 0, err
	}
	return 0, t.writeTimer(a[1], tm.at, tm.interval)
}

func sysTimerGetoverrun(t *thread, a args) (uint64, error) {
	tm, err := t.timerOf(a[0])
	if err != nil {
		return 0, err
	}
	return uint64(tm.overrun), nil
}

func sysTimerDelete(t *thread, a args) (uint64, error) {
	if _, err := t.timerOf(a[0]); err != nil {
		return 0, err
	}
	delete(t.proc.timers, int(int32(a[0])))
	return 0, nil
}

// firePosixTimers fires p's timers due at clock, in the order of their
// ids.
func (k *Kernel) firePosixTimers(p *process, clock time.Duration) error {
	for id := 0; id < maxTimers && len(p.timers) > 0; id++ {
		tm := p.timers[id]
		if tm == nil || tm.at == 0 || clock < tm.at {
			continue
		}
		fired := 1
		if tm.interval > 0 {
			fired += int((clock - tm.at) / tm.interval)
			tm.at += time.Duration(fired) * tm.interval
		} else {
			tm.at = 0
		}
		if err := k.notifyTimer(p, id, tm, fired); err != nil {
			return err
		}
	}
	return nil
}

// notifyTimer sends timer id's signal for fired expirations: the ones
// past the first, and all while its last signal is still pending, are
// overruns.
func (k *Kernel) notifyTimer(p *process, id int, tm *posixTimer, fired int) error {
	if tm.notify == sigevNone {
		return nil
	}
	var target *thread
	if tm.notify == sigevThreadID {
		target = k.threadOf(p, tm.tid)
	} else {
		for _, o := range k.threads { // the first thread not blocking it, else the first
			if o.proc == p && o.state != exited && (target == nil || target.sigmask&sigbit(tm.signo) != 0) {
				target = o
			}
		}
	}
	if target == nil {
		return nil
	}
	le := binary.LittleEndian
	if target.pending&sigbit(tm.signo) != 0 {
		// Its signal not yet taken: these expirations are overruns of it
		// (if the pending signal is this timer's).
		if info, ok := target.infos[tm.signo]; ok && le.Uint32(info[8:]) == siTimer && le.Uint32(info[16:]) == uint32(id) {
			tm.overrun += fired
			le.PutUint32(info[20:], uint32(tm.overrun))
			target.infos[tm.signo] = info
		}
		return nil
	}
	tm.overrun = fired - 1
	var info [128]byte
	le.PutUint32(info[0:], uint32(tm.signo))
	le.PutUint32(info[8:], siTimer)
	le.PutUint32(info[16:], uint32(id))
	le.PutUint32(info[20:], uint32(tm.overrun))
	le.PutUint64(info[24:], tm.value)
	return k.signal(target, tm.signo, info)
}
