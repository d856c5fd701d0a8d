package linux

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"
)

// The identity calls (ids, groups) are cred.go's; here the
// capabilities, and the calls about the CPU and time a program asks.

// The capability header's versions (linux/capability.h): v1 has one
// 32-bit set of each kind, v2 and v3 two.
const (
	capVersion1 = 0x19980330
	capVersion2 = 0x20071026
	capVersion3 = 0x20080522
)

// capSets is how many 12-byte {effective, permitted, inheritable}
// structs a header version takes; 0 for an unknown version.
func capSets(version uint32) uint64 {
	switch version {
	case capVersion1:
		return 1
	case capVersion2, capVersion3:
		return 2
	}
	return 0
}

// capHeader reads a capability header and returns how many sets its
// version takes: 0 for an unknown version, the preferred one written back
// (as programs probe it); a negative pid is EINVAL, one not of the
// program's ESRCH.
func (t *thread) capHeader(va uint64) (uint64, error) {
	var h [8]byte
	if err := t.proc.as.Read(va, h[:]); err != nil {
		return 0, memErr(err)
	}
	version, pid := binary.LittleEndian.Uint32(h[:]), int32(binary.LittleEndian.Uint32(h[4:]))
	sets := capSets(version)
	if sets == 0 {
		binary.LittleEndian.PutUint32(h[:], capVersion3)
		return 0, memErr(t.proc.as.Write(va, h[:4]))
	}
	if pid < 0 {
		return 0, unix.EINVAL
	}
	if pid != 0 && t.k.threadByTID(int(pid)) == nil {
		return 0, unix.ESRCH
	}
	return sets, nil
}

// sysCapget: no capabilities, effective, permitted or inheritable. With
// no data it is a probe of the version, which succeeds even for one it
// does not know (the preferred one written back), as on Linux.
func sysCapget(t *thread, a args) (uint64, error) {
	sets, err := t.capHeader(a[0])
	switch {
	case err != nil:
		return 0, err
	case a[1] == 0:
		return 0, nil
	case sets == 0:
		return 0, unix.EINVAL
	}
	return 0, memErr(t.proc.as.Write(a[1], make([]byte, sets*12)))
}

// sysCapset: an unprivileged process may set only what it has: none.
func sysCapset(t *thread, a args) (uint64, error) {
	sets, err := t.capHeader(a[0])
	if err != nil {
		return 0, err
	}
	if sets == 0 {
		return 0, unix.EINVAL
	}
	b := make([]byte, sets*12)
	if err := t.proc.as.Read(a[1], b); err != nil {
		return 0, memErr(err)
	}
	for _, c := range b {
		if c != 0 {
			return 0, unix.EPERM
		}
	}
	return 0, nil
}

// threadByTID is the live thread tid, or nil.
func (k *Kernel) threadByTID(tid int) *thread {
	for _, o := range k.threads {
		if o.tid == tid && o.state != exited {
			return o
		}
	}
	return nil
}

// coarseResolution is the coarse clocks' resolution: the timer tick
// Linux would count them in (CONFIG_HZ=250).
const coarseResolution = 4 * time.Millisecond

func sysClockGetres(t *thread, a args) (uint64, error) {
	clk := a[0]
	if !validClock(clk) {
		return 0, unix.EINVAL
	}
	if a[1] == 0 {
		return 0, nil
	}
	res := time.Nanosecond
	if clk == unix.CLOCK_REALTIME_COARSE || clk == unix.CLOCK_MONOTONIC_COARSE {
		res = coarseResolution
	}
	return 0, memErr(t.proc.as.Write(a[1], timespec(res)))
}

// sysSchedSetaffinity: the program has one CPU; a mask that includes it
// is accepted (for any of its threads), one that does not is EINVAL.
func sysSchedSetaffinity(t *thread, a args) (uint64, error) {
	if a[0] != 0 && t.k.threadByTID(int(int32(a[0]))) == nil {
		return 0, unix.ESRCH
	}
	if a[1] == 0 {
		return 0, unix.EINVAL
	}
	var b [1]byte
	if err := t.proc.as.Read(a[2], b[:]); err != nil {
		return 0, memErr(err)
	}
	if b[0]&1 == 0 {
		return 0, unix.EINVAL
	}
	return 0, nil
}

// sysGetcpu: CPU 0, node 0.
func sysGetcpu(t *thread, a args) (uint64, error) {
	var zero [4]byte
	for _, va := range a[:2] {
		if va != 0 {
			if err := t.proc.as.Write(va, zero[:]); err != nil {
				return 0, memErr(err)
			}
		}
	}
	return 0, nil
}

// sysCloseRange closes, or marks close-on-exec, the descriptors from
// first to last.
func sysCloseRange(t *thread, a args) (uint64, error) {
	first, last, flags := uint32(a[0]), uint32(a[1]), a[2]
	if flags&^(unix.CLOSE_RANGE_UNSHARE|unix.CLOSE_RANGE_CLOEXEC) != 0 || first > last {
		return 0, unix.EINVAL
	}
	fds := t.proc.fds
	for _, fd := range fds.Sorted() {
		if uint32(fd) < first || uint32(fd) > last {
			continue
		}
		if flags&unix.CLOSE_RANGE_CLOEXEC != 0 {
			fds[fd].Cloexec = true
		} else {
			t.proc.closeFD(fd)
		}
	}
	return 0, nil
}
