package linux

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/linux/vfs"
)

// The calls that set a file's access and modification times. Each also
// sets its change time to now, as Linux does.

// The special tv_nsec values of utimensat.
const (
	utimeNow  = 1<<30 - 1
	utimeOmit = 1<<30 - 2
)

// utimeWhat is one time utimensat sets: now, left as it is, or a value
// (ns since the Unix epoch).
type utimeWhat struct {
	omit, now bool
	ns        int64
}

// sysUtimensat sets the times of the file dirfd and path name (path 0:
// dirfd's own file, as futimens asks), from two timespecs or now (times
// 0).
func sysUtimensat(t *thread, a args) (uint64, error) {
	if a[3]&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return 0, unix.EINVAL
	}
	times, err := t.readUtimes(a[2], 16, func(b []byte) (utimeWhat, error) {
		sec, nsec := int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))
		switch {
		case nsec == utimeOmit:
			return utimeWhat{omit: true}, nil
		case nsec == utimeNow:
			return utimeWhat{now: true, ns: t.k.fileTime()}, nil
		case nsec < 0 || nsec >= 1e9:
			return utimeWhat{}, unix.EINVAL
		}
		return utimeWhat{ns: sec*1e9 + nsec}, nil
	})
	if err != nil {
		return 0, err
	}
	if a[1] == 0 {
		if a[3]&unix.AT_SYMLINK_NOFOLLOW != 0 {
			return 0, unix.EINVAL
		}
		f, err := t.proc.fds.Get(a[0])
		if err != nil {
			return 0, err
		}
		return 0, t.setTimes(f, nil, times)
	}
	f, n, err := t.target(a[0], a[1], a[3])
	if err != nil {
		return 0, err
	}
	return 0, t.setTimes(f, n, times)
}

// sysFutimesat and sysUtimes take two timevals (0: now).
func sysFutimesat(t *thread, a args) (uint64, error) {
	times, err := t.readUtimes(a[2], 16, func(b []byte) (utimeWhat, error) {
		sec, usec := int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))
		if usec < 0 || usec >= 1e6 {
			return utimeWhat{}, unix.EINVAL
		}
		return utimeWhat{ns: sec*1e9 + usec*1e3}, nil
	})
	if err != nil {
		return 0, err
	}
	_, n, err := t.target(a[0], a[1], 0)
	if err != nil {
		return 0, err
	}
	return 0, t.setTimes(nil, n, times)
}

func sysUtimes(t *thread, a args) (uint64, error) {
	return sysFutimesat(t, args{atFDCWD, a[0], a[1]})
}

// sysUtime takes a struct utimbuf: two seconds (0: now).
func sysUtime(t *thread, a args) (uint64, error) {
	times, err := t.readUtimes(a[1], 8, func(b []byte) (utimeWhat, error) {
		return utimeWhat{ns: int64(binary.LittleEndian.Uint64(b)) * 1e9}, nil
	})
	if err != nil {
		return 0, err
	}
	_, n, err := t.target(atFDCWD, a[0], 0)
	if err != nil {
		return 0, err
	}
	return 0, t.setTimes(nil, n, times)
}

// readUtimes reads the access and modification times at va, each size
// bytes decoded by one; va 0 is both now.
func (t *thread) readUtimes(va uint64, size int, one func([]byte) (utimeWhat, error)) ([2]utimeWhat, error) {
	if va == 0 {
		now := t.k.fileTime()
		return [2]utimeWhat{{now: true, ns: now}, {now: true, ns: now}}, nil
	}
	b := make([]byte, 2*size)
	if err := t.proc.as.Read(va, b); err != nil {
		return [2]utimeWhat{}, memErr(err)
	}
	var out [2]utimeWhat
	for i := range out {
		w, err := one(b[i*size:])
		if err != nil {
			return [2]utimeWhat{}, err
		}
		out[i] = w
	}
	return out, nil
}

// setTimes gives the node of f (or n) times; a pipe's times are not kept.
// Times given are the owner's to set (EPERM); now, a writer's too
// (EACCES).
func (t *thread) setTimes(f *openFile, n *node, times [2]utimeWhat) error {
	if f != nil {
		n = f.Node()
	}
	if n == nil || times[0].omit && times[1].omit {
		return nil
	}
	if !t.k.fs.Owns(n) {
		if !times[0].now || !times[1].now {
			return unix.EPERM
		}
		if err := t.k.fs.Access(n, vfs.MayWrite); err != nil {
			return err
		}
	}
	if !times[0].omit {
		n.Times.Atime = times[0].ns
	}
	if !times[1].omit {
		n.Times.Mtime = times[1].ns
	}
	t.k.fs.Changed(n)
	return nil
}
