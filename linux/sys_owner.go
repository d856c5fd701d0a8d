package linux

import (
	"golang.org/x/sys/unix"
)

// The chown calls answer as they do for the program's user: root gives
// any file to anyone; another user, a file's owner, may leave it as it is
// or give it to a group the user is in (the program's user has one
// group); anything else is EPERM, as it is for a file another user owns.

func sysChown(t *thread, a args) (uint64, error) {
	return sysFchownat(t, args{atFDCWD, a[0], a[1], a[2], 0})
}

func sysLchown(t *thread, a args) (uint64, error) {
	return sysFchownat(t, args{atFDCWD, a[0], a[1], a[2], unix.AT_SYMLINK_NOFOLLOW})
}

func sysFchown(t *thread, a args) (uint64, error) {
	f, err := t.proc.fds.Get(a[0])
	if err != nil {
		return 0, err
	}
	return 0, t.chownFile(f, a[1], a[2])
}

func sysFchownat(t *thread, a args) (uint64, error) {
	if a[4]&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return 0, unix.EINVAL
	}
	f, n, err := t.target(a[0], a[1], a[4])
	switch {
	case err != nil:
		return 0, err
	case f != nil:
		return 0, t.chownFile(f, a[2], a[3])
	}
	return 0, t.chown(n, a[2], a[3])
}

// chownFile is chown of an open file's node: a pipe's owner is not the
// program's to change.
func (t *thread) chownFile(f *openFile, owner, group uint64) error {
	n := f.Node()
	if n == nil {
		return unix.EPERM
	}
	return t.chown(n, owner, group)
}

// chown gives n the owner and group the program's user may: -1 (as a
// 32-bit value) leaves one as it is.
func (t *thread) chown(n *node, owner, group uint64) error {
	const same = 1<<32 - 1
	u := t.proc.cred.user()
	owner, group = owner&same, group&same
	switch {
	case u.UID == 0:
	case n.UID != u.UID,
		owner != same && owner != uint64(u.UID),
		group != same && group != uint64(u.GID):
		return unix.EPERM
	}
	if owner != same {
		n.UID = uint32(owner)
	}
	if group != same {
		n.GID = uint32(group)
	}
	t.k.fs.Changed(n)
	return nil
}

// The set and remove calls of extended attributes find their file and
// answer that the program's file system keeps none (EOPNOTSUPP), as a
// file system without them does: cp -a, tar and rsync go on without.

func sysSetxattr(t *thread, a args) (uint64, error) {
	if _, err := t.nodeAt(atFDCWD, a[0]); err != nil {
		return 0, err
	}
	return 0, unix.EOPNOTSUPP
}

func sysLsetxattr(t *thread, a args) (uint64, error) {
	if _, _, err := t.target(atFDCWD, a[0], unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, err
	}
	return 0, unix.EOPNOTSUPP
}

func sysFsetxattr(t *thread, a args) (uint64, error) {
	if _, err := t.proc.fds.Get(a[0]); err != nil {
		return 0, err
	}
	return 0, unix.EOPNOTSUPP
}

// sysCopyFileRange copies between two regular files in the kernel, as
// Linux's does: each offset from its pointer (left in the file's offset
// when the pointer is NULL), EINVAL for flags, a file that is not
// regular, or overlapping ranges of one file; EBADF for the wrong access
// mode.
func sysCopyFileRange(t *thread, a args) (uint64, error) {
	if a[5] != 0 {
		return 0, unix.EINVAL
	}
	fds := t.proc.fds
	in, err := fds.Get(a[0])
	if err != nil {
		return 0, err
	}
	out, err := fds.Get(a[2])
	switch {
	case err != nil:
		return 0, err
	case !in.Readable() || !out.Writable() || out.Flags&unix.O_APPEND != 0:
		return 0, unix.EBADF
	case in.Node() == nil || out.Node() == nil || !in.Node().IsRegular() || !out.Node().IsRegular():
		return 0, unix.EINVAL
	}
	offset := func(ptr uint64, f *openFile) (int64, error) {
		if ptr == 0 {
			return f.Off, nil
		}
		v, err := t.proc.as.Uint64(ptr)
		return int64(v), memErr(err)
	}
	from, err := offset(a[1], in)
	if err != nil {
		return 0, err
	}
	to, err := offset(a[3], out)
	if err != nil {
		return 0, err
	}
	count := min(a[4], maxRWCount)
	if err := verifyArea(from, count); err != nil {
		return 0, err
	}
	if err := verifyArea(to, count); err != nil {
		return 0, err
	}
	if in.Node() == out.Node() && from < to+int64(count) && to < from+int64(count) {
		return 0, unix.EINVAL
	}
	w, err := t.copyRange(in, from, out, to, count)
	if err != nil {
		return 0, err
	}
	for _, end := range []struct {
		ptr uint64
		f   *openFile
		at  int64
	}{{a[1], in, from + int64(w)}, {a[3], out, to + int64(w)}} {
		if end.ptr == 0 {
			end.f.Off = end.at
		} else if err := t.proc.as.PutUint64(end.ptr, uint64(end.at)); err != nil {
			return 0, memErr(err)
		}
	}
	return uint64(w), nil
}
