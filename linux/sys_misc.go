package linux

import (
	"cmp"
	"encoding/binary"
	"errors"

	"github.com/reprise-vm/reprise/linux/mm"
	"github.com/reprise-vm/reprise/linux/vfs"
	"golang.org/x/sys/unix"
)

func sysGetrusage(t *thread, a args) (uint64, error) {
	return 0, memErr(t.proc.as.Write(a[1], make([]byte, 144)))
}

func sysRename(t *thread, a args) (uint64, error) {
	return sysRenameat(t, args{atFDCWD, a[0], atFDCWD, a[1]})
}

func sysGetxattr(*thread, args) (uint64, error) { return 0, unix.ENODATA }

func sysLgetxattr(*thread, args) (uint64, error) { return 0, unix.ENODATA }

func sysFgetxattr(*thread, args) (uint64, error) { return 0, unix.ENODATA }

// fdOnly is a call that checks its descriptor and does nothing more (the
// program's files are in memory: nothing to sync).
func fdOnly(t *thread, a args) (uint64, error) {
	_, err := t.proc.fds.Get(a[0])
	return 0, err
}

// sysPrctl: naming a thread, and asking its name, its parent-death signal
// and dumpability (accepted, not kept), the child subreaper; the rest is
// not supported.
func sysPrctl(t *thread, a args) (uint64, error) {
	switch a[0] {
	case unix.PR_SET_NAME:
		var b [taskCommLen]byte
		if err := t.proc.as.Read(a[1], b[:]); err != nil {
			return 0, memErr(err)
		}
		t.comm = commOf(string(b[:]))
		return 0, nil
	case unix.PR_SET_PDEATHSIG, unix.PR_SET_DUMPABLE:
		return 0, nil
	case unix.PR_GET_NAME:
		var b [taskCommLen]byte
		copy(b[:], t.comm)
		return 0, memErr(t.proc.as.Write(a[1], b[:]))
	case unix.PR_GET_DUMPABLE:
		return 1, nil
	case unix.PR_SET_CHILD_SUBREAPER:
		t.proc.subreaper = a[1] != 0
		return 0, nil
	case unix.PR_GET_CHILD_SUBREAPER:
		var b [4]byte
		if t.proc.subreaper {
			b[0] = 1
		}
		return 0, memErr(t.proc.as.Write(a[1], b[:]))
	}
	return 0, unix.EINVAL
}

// sysSysinfo describes the guest: its RAM, one CPU, its uptime.
func sysSysinfo(t *thread, a args) (uint64, error) {
	up, err := t.k.m.Clock()
	if err != nil {
		return 0, err
	}
	var b [112]byte
	le := binary.LittleEndian
	le.PutUint64(b[0:], uint64(up.Seconds()))
	ram := t.k.m.RAM().Size()
	le.PutUint64(b[32:], ram)                      // totalram
	le.PutUint64(b[40:], ram-t.k.fr.InUse())       // freeram
	le.PutUint16(b[80:], uint16(len(t.k.threads))) // procs
	le.PutUint32(b[104:], 1)                       // mem_unit
	return 0, memErr(t.proc.as.Write(a[0], b[:]))
}

// sysFtruncate sets a file's size. A negative length is EINVAL before the
// descriptor is looked at, as on Linux; one past what the program's files
// may hold is EFBIG.
func sysFtruncate(t *thread, a args) (uint64, error) {
	if int64(a[1]) < 0 {
		return 0, unix.EINVAL
	}
	f, err := t.proc.fds.Get(a[0])
	if err != nil {
		return 0, err
	}
	if f.Node() == nil || !f.Node().IsRegular() || !f.Writable() {
		return 0, unix.EINVAL
	}
	return 0, t.truncate(f.Node(), int64(a[1]))
}

// sysTruncate sets the size of the file at a path, which the program
// must be allowed to write: EISDIR for a directory, EINVAL for what is
// no regular file.
func sysTruncate(t *thread, a args) (uint64, error) {
	if int64(a[1]) < 0 {
		return 0, unix.EINVAL
	}
	n, err := t.nodeAt(atFDCWD, a[0])
	switch {
	case err != nil:
		return 0, err
	case n.Dir:
		return 0, unix.EISDIR
	case !n.IsRegular():
		return 0, unix.EINVAL
	}
	if err := t.k.fs.Access(n, vfs.MayWrite); err != nil {
		return 0, err
	}
	return 0, t.truncate(n, int64(a[1]))
}

// truncate makes regular file n size bytes long: EFBIG past what the
// program's files may hold, EPERM against a memfd's seals.
func (t *thread) truncate(n *node, size int64) error {
	if size > maxFileBytes {
		return unix.EFBIG
	}
	if err := t.k.fs.Resize(n, size); err != nil {
		if errors.Is(err, unix.EPERM) {
			return err
		}
		return unix.EFBIG
	}
	n.Written = true
	t.k.fs.Modified(n)
	return nil
}

// sysFallocate reserves a file's space, as tmpfs: mode 0 grows the file
// to cover the range, FALLOC_FL_KEEP_SIZE only reserves (nothing to do:
// a file here is memory), FALLOC_FL_PUNCH_HOLE (with KEEP_SIZE) zeroes
// the range within the file; the other modes are EOPNOTSUPP.
func sysFallocate(t *thread, a args) (uint64, error) {
	mode, off, length := a[1], int64(a[2]), int64(a[3])
	const punch = unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE
	switch {
	case off < 0 || length <= 0:
		return 0, unix.EINVAL
	case mode&^unix.FALLOC_FL_KEEP_SIZE != 0 && mode != punch:
		return 0, unix.EOPNOTSUPP
	}
	f, err := t.proc.fds.Get(a[0])
	switch {
	case err != nil:
		return 0, err
	case !f.Writable():
		return 0, unix.EBADF
	case f.Node() == nil:
		return 0, unix.ESPIPE
	case f.Node().Dir:
		return 0, unix.EISDIR
	case !f.Node().IsRegular():
		return 0, unix.ENODEV
	case off > vfs.MaxFileSize-length:
		return 0, unix.EFBIG
	}
	end := off + length
	switch size := f.Node().Size(); {
	case mode == punch && off < size:
		zeros := make([]byte, min(min(end, size)-off, 64<<10)) // a hole reads as zeros
		for at := off; at < min(end, size); at += int64(len(zeros)) {
			if _, err := f.Write(zeros[:min(int64(len(zeros)), min(end, size)-at)], at); err != nil {
				return 0, err
			}
		}
		return 0, nil
	case mode == 0 && end > size:
		return 0, t.truncate(f.Node(), end)
	}
	return 0, nil
}

// sysMremap resizes a mapping, which one range must hold: shrinking
// unmaps its tail, growing extends it in place when the pages after it are free and below the top of user
// space, else (MREMAP_MAYMOVE) moves it, its frames with it.
func sysMremap(t *thread, a args) (uint64, error) {
	old, oldLen, newLen, flags := a[0], pageUp(a[1]), pageUp(a[2]), a[3]
	const mayMove = 1
	as := t.proc.as
	if _, ok := mm.CheckRange(old, oldLen); !ok || newLen == 0 || newLen > maxUserAddr || flags&^mayMove != 0 {
		return 0, unix.EINVAL // MREMAP_FIXED and DONTUNMAP included
	}
	if !as.Within(old, old+oldLen) {
		return 0, unix.EFAULT
	}
	switch {
	case newLen <= oldLen:
		return old, memErr(as.Unmap(old+newLen, old+oldLen))
	case old+newLen <= maxUserAddr && as.Free(old+oldLen, old+newLen):
		return old, memErr(as.Extend(old+oldLen, old+newLen))
	case flags&mayMove == 0:
		return 0, unix.ENOMEM
	}
	to, ok := as.FindFree(newLen)
	if !ok {
		return 0, unix.ENOMEM
	}
	return to, memErr(as.Remap(old, oldLen, to, newLen))
}

// sysRenameat moves an entry; an existing file at the new name is
// replaced. renameat2's flags other than none are not supported; renameat,
// which takes no flags, finds a[4] zero (the dispatcher clears it).
// sysRenameat is renameat and renameat2, with its flags: NOREPLACE fails
// with EEXIST where the target exists, EXCHANGE swaps the two entries;
// WHITEOUT needs a privilege the program has not.
func sysRenameat(t *thread, a args) (uint64, error) {
	flags := a[4]
	switch {
	case flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE|unix.RENAME_WHITEOUT) != 0,
		flags&unix.RENAME_EXCHANGE != 0 && flags&(unix.RENAME_NOREPLACE|unix.RENAME_WHITEOUT) != 0:
		return 0, unix.EINVAL
	case flags&unix.RENAME_WHITEOUT != 0:
		return 0, unix.EPERM
	}
	from, err := t.parentOf(a[0], a[1])
	if err != nil {
		return 0, err
	}
	to, err := t.parentOf(a[2], a[3])
	if err != nil {
		return 0, err
	}
	if flags&unix.RENAME_EXCHANGE != 0 {
		return 0, t.k.fs.Exchange(from, to)
	}
	if flags&unix.RENAME_NOREPLACE != 0 {
		// The source is looked up first.
		if ok, err := t.k.fs.Exists(from); err != nil || !ok {
			return 0, cmp.Or(err, error(unix.ENOENT))
		}
		if ok, err := t.k.fs.Exists(to); err != nil || ok {
			return 0, cmp.Or(err, error(unix.EEXIST))
		}
	}
	return 0, t.k.fs.Rename(from, to)
}
