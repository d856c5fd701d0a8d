package linux

import (
	"cmp"
	"encoding/binary"

	"github.com/reprise-vm/reprise/linux/mm"
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
	n := int64(a[1])
	if n < 0 {
		return 0, unix.EINVAL
	}
	f, err := t.proc.fds.Get(a[0])
	if err != nil {
		return 0, err
	}
	if f.Node() == nil || !f.Node().IsRegular() || !f.Writable() {
		return 0, unix.EINVAL
	}
	if n > maxFileBytes || t.k.fs.Resize(f.Node(), n) != nil {
		return 0, unix.EFBIG
	}
	f.Node().Written = true
	t.k.fs.Modified(f.Node())
	return 0, nil
}

// sysMremap resizes a mapping: shrinking unmaps its tail, growing extends
// it in place when the pages after it are free and below the top of user
// space, else (MREMAP_MAYMOVE) moves it, its frames with it.
func sysMremap(t *thread, a args) (uint64, error) {
	old, oldLen, newLen, flags := a[0], pageUp(a[1]), pageUp(a[2]), a[3]
	const mayMove = 1
	as := t.proc.as
	if _, ok := mm.CheckRange(old, oldLen); !ok || newLen == 0 || newLen > maxUserAddr || flags&^mayMove != 0 {
		return 0, unix.EINVAL // MREMAP_FIXED and DONTUNMAP included
	}
	if !as.Covered(old, old+oldLen) {
		return 0, unix.EFAULT
	}
	p := as.ProtAt(old)
	switch {
	case newLen <= oldLen:
		return old, memErr(as.Unmap(old+newLen, old+oldLen))
	case old+newLen <= maxUserAddr && as.Free(old+oldLen, old+newLen):
		return old, memErr(as.Map(old+oldLen, old+newLen, p))
	case flags&mayMove == 0:
		return 0, unix.ENOMEM
	}
	to, ok := as.FindFree(newLen)
	if !ok {
		return 0, unix.ENOMEM
	}
	return to, memErr(as.Remap(old, oldLen, to, newLen, p))
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
