package linux

import (
	"cmp"
	"encoding/binary"
	"errors"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/linux/vfs"
)

func sysOpen(t *thread, a args) (uint64, error) { return sysOpenat(t, args{atFDCWD, a[0], a[1], a[2]}) }

func sysCreat(t *thread, a args) (uint64, error) {
	return sysOpenat(t, args{atFDCWD, a[0], unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC, a[1]})
}

func sysDup(t *thread, a args) (uint64, error) { return sysFcntl(t, args{a[0], unix.F_DUPFD, 0}) }

func sysDup2(t *thread, a args) (uint64, error) { return t.dup3(a[0], a[1], 0, true) }

func sysDup3(t *thread, a args) (uint64, error) { return t.dup3(a[0], a[1], a[2], false) }

func sysUnlink(t *thread, a args) (uint64, error) { return sysUnlinkat(t, args{atFDCWD, a[0], 0}) }

func sysRmdir(t *thread, a args) (uint64, error) {
	return sysUnlinkat(t, args{atFDCWD, a[0], unix.AT_REMOVEDIR})
}

func sysMkdir(t *thread, a args) (uint64, error) { return sysMkdirat(t, args{atFDCWD, a[0], a[1]}) }

func sysAccess(t *thread, a args) (uint64, error) { return sysFaccessat(t, args{atFDCWD, a[0], a[1]}) }

func sysReadlink(t *thread, a args) (uint64, error) {
	return sysReadlinkat(t, args{atFDCWD, a[0], a[1], a[2]})
}

// sysSendfile copies up to count bytes from in_fd (at *offset if given,
// which then advances, else at and advancing its own offset) to out_fd,
// checking its arguments in the order Linux's do_sendfile does.
func sysSendfile(t *thread, a args) (uint64, error) {
	count := a[3]
	var at int64
	if a[2] != 0 {
		v, err := t.proc.as.Uint64(a[2])
		if err != nil {
			return 0, memErr(err)
		}
		at = int64(v)
	}
	fds := t.proc.fds
	in, err := fds.Get(a[1])
	switch {
	case err != nil:
		return 0, err
	case !in.Readable():
		return 0, unix.EBADF
	case a[2] != 0 && !in.Seekable():
		return 0, unix.ESPIPE
	case a[2] == 0:
		at = in.Off
	}
	if err := verifyArea(at, count); err != nil {
		return 0, err
	}
	count = min(count, maxRWCount) // before the output's check
	out, err := fds.Get(a[0])
	switch {
	case err != nil:
		return 0, err
	case !out.Writable():
		return 0, unix.EBADF
	case !out.IsPipe() && out.Flags&unix.O_APPEND != 0:
		return 0, unix.EINVAL // splice refuses to append
	case in.Node() == nil || in.Node().Dir:
		return 0, unix.EINVAL // nothing to splice from
	}
	if out.Seekable() {
		if err := verifyArea(out.Off, count); err != nil {
			return 0, err
		}
	}
	w, err := t.copyRange(in, at, out, out.Off, count)
	if err != nil {
		return 0, err
	}
	if out.Seekable() {
		out.Off += int64(w)
	}
	if a[2] != 0 {
		return uint64(w), memErr(t.proc.as.PutUint64(a[2], uint64(at+int64(w))))
	}
	in.Off = at + int64(w)
	return uint64(w), nil
}

// copyRange moves what one read of in at from gives, at most count bytes
// (and maxIO), to out at to, as the calls that copy in the kernel do, and
// returns how many bytes were written.
func (t *thread) copyRange(in *openFile, from int64, out *openFile, to int64, count uint64) (int, error) {
	buf := t.k.scratch(min(count, maxIO))
	n, err := t.readFile(in, buf, from)
	if err != nil {
		return 0, err
	}
	return t.writeFile(out, buf[:n], to)
}

const atFDCWD = ^uint64(99) // AT_FDCWD, -100

// maxIO bounds what one read or write moves; the program loops for more,
// as it must for Linux too.
const maxIO = 1 << 20

// scratch is a buffer of n (at most maxIO) bytes to move data through
// between guest memory and a file, the same from call to call: a read or
// write that made its own spent more on allocating and zeroing it than on
// the move (a 4 KiB pread two thirds of its time). Calls are served one at a
// time, no file keeps a slice it is given to write (each copies), and
// only what a read filled is written to the guest.
func (k *Kernel) scratch(n uint64) []byte {
	if uint64(cap(k.io)) < n {
		k.io = make([]byte, n)
	}
	return k.io[:n]
}

// Limits Linux puts on the offsets and counts of reads and writes.
const (
	// maxFileSize is the largest offset and file size, tmpfs's
	// (MAX_LFS_FILESIZE): the program's files are in memory. Before that
	// the 1 GiB of all files runs out (ENOSPC).
	maxFileSize = vfs.MaxFileSize
	// maxRWCount is MAX_RW_COUNT, the most one call moves.
	maxRWCount = 0x7ffff000
)

// userRange is Linux's access_ok: [va, va+n) lies in user space. A read
// or write checks it for the whole count before moving anything.
func userRange(va, n uint64) bool { return va+n >= va && va+n <= maxUserAddr }

// verifyArea is Linux's rw_verify_area for a file with a position: a
// count that is negative as a ssize_t, a negative position, or a range
// that ends past the largest offset is EINVAL.
func verifyArea(pos int64, count uint64) error {
	if int64(count) < 0 || pos < 0 || pos > maxFileSize-int64(count) {
		return unix.EINVAL
	}
	return nil
}

// path reads a path argument and resolves it (resolve).
func (t *thread) path(dirfd, va uint64) (string, error) {
	p, err := t.proc.as.ReadString(va, unix.PathMax)
	if err != nil {
		return "", memErr(err)
	}
	return t.resolve(dirfd, p)
}

// resolve makes p absolute: a relative path starts from dirfd, the
// working directory for AT_FDCWD, else an open directory.
func (t *thread) resolve(dirfd uint64, p string) (string, error) {
	if p == "" {
		return "", unix.ENOENT
	}
	if p[0] == '/' {
		return p, nil
	}
	dir := t.proc.cwd
	if int32(dirfd) != unix.AT_FDCWD { // an int: the C library leaves the upper half zero
		d, err := t.proc.fds.Get(dirfd)
		if err != nil {
			return "", err
		}
		if dir = d.Node(); dir == nil || !dir.Dir {
			return "", unix.ENOTDIR
		}
	}
	if dir == nil {
		return "/" + p, nil
	}
	at, ok := t.k.fs.DirPath(dir)
	if !ok {
		return "", unix.ENOENT // the directory was removed
	}
	return at + "/" + p, nil
}

// readFile reads f at off for t: a read that would block waits on f's
// queue and runs again when it changes.
func (t *thread) readFile(f *openFile, b []byte, off int64) (int, error) {
	n, err := f.Read(b, off)
	if err == vfs.ErrWouldBlock {
		return 0, t.blockOnFiles(f)
	}
	return n, err
}

// writeFile writes b to f at off for t: a write that would block waits
// as readFile does; one to a pipe no one reads raises SIGPIPE and fails
// with EPIPE.
func (t *thread) writeFile(f *openFile, b []byte, off int64) (int, error) {
	n, err := f.Write(b, off)
	switch err {
	case vfs.ErrWouldBlock:
		return 0, t.blockOnFiles(f)
	case vfs.ErrNoReaders:
		return 0, t.brokenPipe()
	}
	return n, err
}

// brokenPipe raises SIGPIPE at t, whose write found no reader, and is
// the EPIPE the write fails with (or the error of the raise).
func (t *thread) brokenPipe() error {
	sig := uint64(unix.SIGPIPE)
	if err := t.k.signal(t, sig, t.k.siginfo(sig, siUser, uint64(t.proc.pid))); err != nil {
		return err
	}
	return unix.EPIPE
}

// rw moves up to n bytes between the guest buffer at va and the file fd:
// at *pos (pread, pwrite), or at and advancing the file's offset (pos
// nil). Its arguments are checked in the order Linux checks them.
func (t *thread) rw(fd, va, n uint64, pos *int64, write bool) (uint64, error) {
	if pos != nil && *pos < 0 {
		return 0, unix.EINVAL // before the descriptor
	}
	f, err := t.proc.fds.Get(fd)
	switch {
	case err != nil:
		return 0, err
	case pos != nil && !f.Seekable():
		return 0, unix.ESPIPE
	case write && !f.Writable(), !write && !f.Readable():
		return 0, unix.EBADF
	case !userRange(va, n):
		return 0, unix.EFAULT
	}
	at := f.Off
	if pos != nil {
		at = *pos
	}
	if f.Seekable() {
		if err := verifyArea(at, n); err != nil {
			return 0, err
		}
	}
	if n == 0 && f.IsPipe() {
		return 0, nil // neither blocks nor raises SIGPIPE
	}
	if write && f.Flags&unix.O_APPEND != 0 && f.Node() != nil {
		at = f.Node().Size() // pwrite too, as on Linux
	}
	b := t.k.scratch(min(n, maxIO))
	var done int
	if write {
		if err := t.proc.as.Read(va, b); err != nil {
			return 0, memErr(err)
		}
		done, err = t.writeFile(f, b, at)
	} else {
		done, err = t.readFile(f, b, at)
		if err == nil {
			err = memErr(t.proc.as.Write(va, b[:done]))
		}
	}
	if err != nil {
		return 0, err
	}
	if pos == nil && f.Seekable() {
		f.Off = at + int64(done)
	}
	return uint64(done), nil
}

func sysRead(t *thread, a args) (uint64, error)  { return t.rw(a[0], a[1], a[2], nil, false) }
func sysWrite(t *thread, a args) (uint64, error) { return t.rw(a[0], a[1], a[2], nil, true) }
func sysPread(t *thread, a args) (uint64, error) {
	pos := int64(a[3])
	return t.rw(a[0], a[1], a[2], &pos, false)
}
func sysPwrite(t *thread, a args) (uint64, error) {
	pos := int64(a[3])
	return t.rw(a[0], a[1], a[2], &pos, true)
}

// maxIOV is IOV_MAX.
const maxIOV = 1024

// iovec is struct iovec: one segment of a readv or writev.
type iovec struct{ base, len uint64 }

// iovecs reads an iovec array of count segments at va, checked whole as
// Linux's import_iovec does: more than IOV_MAX segments, or one whose
// length is negative as a ssize_t, is EINVAL, one outside user space
// EFAULT, and the total is clamped to MAX_RW_COUNT.
func (t *thread) iovecs(va, count uint64) ([]iovec, uint64, error) {
	if count > maxIOV {
		return nil, 0, unix.EINVAL
	}
	raw := make([]byte, count*16)
	if err := t.proc.as.Read(va, raw); err != nil {
		return nil, 0, memErr(err)
	}
	segs := make([]iovec, count)
	for i := range segs {
		segs[i] = iovec{binary.LittleEndian.Uint64(raw[i*16:]), binary.LittleEndian.Uint64(raw[i*16+8:])}
		if int64(segs[i].len) < 0 {
			return nil, 0, unix.EINVAL
		}
	}
	var total uint64
	for i := range segs {
		s := &segs[i]
		if count == 1 {
			s.len = min(s.len, maxRWCount) // one segment is clamped before its range is checked (import_ubuf)
		}
		if !userRange(s.base, s.len) {
			return nil, 0, unix.EFAULT
		}
		s.len = min(s.len, maxRWCount-total)
		total += s.len
	}
	return segs, total, nil
}

// vectored reads or writes an iovec array (iovecs), segment by segment,
// stopping at a short transfer.
func (t *thread) vectored(fd, va, count uint64, write bool) (uint64, error) {
	f, err := t.proc.fds.Get(fd)
	switch {
	case err != nil:
		return 0, err
	case write && !f.Writable(), !write && !f.Readable():
		return 0, unix.EBADF
	case count == 0:
		return 0, nil
	}
	segs, total, err := t.iovecs(va, count)
	switch {
	case err != nil:
		return 0, err
	case total == 0:
		return 0, nil
	}
	if f.Seekable() {
		if err := verifyArea(f.Off, total); err != nil {
			return 0, err
		}
	}
	var done uint64
	for _, s := range segs {
		if done >= maxIO {
			break
		}
		if s.len == 0 {
			continue
		}
		want := min(s.len, maxIO-done)
		n, err := t.rw(fd, s.base, want, nil, write)
		if err != nil {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
		done += n
		if n < want {
			break
		}
	}
	return done, nil
}

func sysReadv(t *thread, a args) (uint64, error)  { return t.vectored(a[0], a[1], a[2], false) }
func sysWritev(t *thread, a args) (uint64, error) { return t.vectored(a[0], a[1], a[2], true) }

// sysLseek moves a file's offset: each kind of file moves its own
// (vfs: a regular file's as tmpfs does, a directory's as
// dcache_dir_lseek, a device's stays 0); a pipe or the console has none.
func sysLseek(t *thread, a args) (uint64, error) {
	f, err := t.proc.fds.Get(a[0])
	if err != nil {
		return 0, err
	}
	return f.Lseek(int64(a[1]), a[2])
}

func sysClose(t *thread, a args) (uint64, error) {
	if _, err := t.proc.fds.Get(a[0]); err != nil {
		return 0, err
	}
	t.proc.closeFD(int(a[0]))
	return 0, nil
}

// sysOpenat opens, or creates, the file at a path, refusing what Linux's
// open refuses in its order: O_CREAT with a trailing slash (EISDIR), an
// existing file with O_CREAT|O_EXCL, a directory with O_CREAT or for
// writing, a file with O_DIRECTORY.
func sysOpenat(t *thread, a args) (uint64, error) {
	p, err := t.path(a[0], a[1])
	if err != nil {
		return 0, err
	}
	flags := a[2]
	creat := flags&unix.O_CREAT != 0
	if creat {
		e, err := t.k.fs.Parent(p)
		if err != nil {
			return 0, err
		}
		if e.Slash && e.Named() {
			return 0, unix.EISDIR
		}
	}
	n, err := t.walk(p, flags&unix.O_NOFOLLOW == 0)
	if pipe := (fdPipe{}); errors.As(err, &pipe) {
		return t.reopen(pipe.f, flags)
	}
	created := false
	switch {
	case err == unix.ENOENT && creat:
		e, err := t.k.fs.Final(p)
		if err != nil {
			return 0, err
		}
		if n, err = t.k.fs.Create(e, uint32(a[3])&0o777&^t.proc.umask); err != nil {
			return 0, err
		}
		created = true // opened as asked, whatever mode it was given
	case err != nil:
		return 0, err
	case n.IsSymlink() && flags&unix.O_PATH == 0:
		return 0, unix.ELOOP // O_NOFOLLOW at a link
	case creat && flags&unix.O_EXCL != 0:
		return 0, unix.EEXIST
	case creat && n.Dir:
		return 0, unix.EISDIR
	case flags&unix.O_DIRECTORY != 0 && !n.Dir:
		return 0, unix.ENOTDIR
	case n.Dir && flags&unix.O_ACCMODE != unix.O_RDONLY:
		return 0, unix.EISDIR
	}
	made, err := t.openProc(n, p, flags)
	switch {
	case err != nil:
		return 0, err
	case made != nil:
		n = made
	}
	if !created && flags&unix.O_PATH == 0 {
		if err := t.k.fs.Access(n, openAccess(flags)); err != nil {
			return 0, err
		}
	}
	switch truncate := flags&unix.O_TRUNC != 0 && flags&unix.O_ACCMODE != unix.O_RDONLY; {
	case n.Type() == unix.S_IFSOCK:
		return 0, unix.ENXIO // a socket file is connected to, never opened
	case n.IsForeign():
		return 0, unix.EACCES // a host FIFO or device: not the program's to open
	case truncate && n.IsRegular():
		t.k.fs.Discard(n)
		t.k.fs.Modified(n)
		n.Written = true
	case flags&unix.O_PATH == 0:
		if err := t.k.fs.Load(n); err != nil {
			return 0, err
		}
	}
	f := t.k.fs.Open(n, p, flags)
	fd, err := t.install(f, flags&unix.O_CLOEXEC != 0)
	if err == nil && made != nil && made.Dir {
		// Linux lists /proc/self/fd as it is read: the descriptor it is
		// open as is among its entries (past the nodes' bound, not).
		_ = t.k.fs.AddSnapshotLink(made, strconv.Itoa(int(fd)), t.fdTarget(f))
	}
	return fd, err
}

// reopen opens f, which has no node, again with flags, as an open of
// /proc/self/fd/N does: a pipe's end of the access asked for; the
// standard streams' file as it is.
func (t *thread) reopen(f *openFile, flags uint64) (uint64, error) {
	if f.AnonName() != "" {
		return 0, unix.ENXIO
	}
	if !f.IsPipe() {
		return t.install(vfs.NewOpenFile(t.k.console, "", flags&(unix.O_ACCMODE|unix.O_NONBLOCK)), flags&unix.O_CLOEXEC != 0)
	}
	r, err := vfs.ReopenPipe(f, flags)
	if err != nil {
		return 0, err
	}
	return t.install(r, flags&unix.O_CLOEXEC != 0)
}

// The requests every file answers (asm-generic/ioctls.h).
const (
	fionread = 0x541b
	fionbio  = 0x5421
	fionclex = 0x5450
	fioclex  = 0x5451
	fioasync = 0x5452
)

// sysIoctl answers the requests Linux's do_vfs_ioctl answers for every
// file (libuv sets O_NONBLOCK with FIONBIO on its pipes, nginx O_ASYNC
// with FIOASYNC on its channels), then asks the file (no kind here is a
// terminal).
func sysIoctl(t *thread, a args) (uint64, error) {
	f, err := t.proc.fds.Get(a[0])
	if err != nil {
		return 0, err
	}
	switch a[1] {
	case fioclex, fionclex:
		t.proc.fds[int(a[0])].Cloexec = a[1] == fioclex
		return 0, nil
	case fionbio, fioasync:
		var b [4]byte
		if err := t.proc.as.Read(a[2], b[:]); err != nil {
			return 0, memErr(err)
		}
		flag := uint64(unix.O_NONBLOCK)
		if a[1] == fioasync {
			flag = unix.O_ASYNC // kept for F_GETFL; no SIGIO is sent
		}
		f.Flags &^= flag
		if binary.LittleEndian.Uint32(b[:]) != 0 {
			f.Flags |= flag
		}
		return 0, nil
	case fionread:
		n, ok := f.Unread()
		if !ok {
			break
		}
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(n)) // an int, as Linux's put_user truncates it
		return 0, memErr(t.proc.as.Write(a[2], b[:]))
	}
	return f.Ioctl(a[1], a[2])
}

func sysFcntl(t *thread, a args) (uint64, error) {
	f, err := t.proc.fds.Get(a[0])
	if err != nil {
		return 0, err
	}
	e := t.proc.fds[int(a[0])]
	switch a[1] {
	case unix.F_DUPFD, unix.F_DUPFD_CLOEXEC:
		if a[2] >= vfs.MaxFDs {
			return 0, unix.EINVAL
		}
		fd, err := t.proc.fds.Install(f, a[1] == unix.F_DUPFD_CLOEXEC, int(a[2]))
		return uint64(fd), err
	case unix.F_GETFD:
		if e.Cloexec {
			return unix.FD_CLOEXEC, nil
		}
		return 0, nil
	case unix.F_SETFD:
		e.Cloexec = a[2]&unix.FD_CLOEXEC != 0
		return 0, nil
	case unix.F_GETFL:
		return f.Flags &^ (unix.O_CREAT | unix.O_EXCL | unix.O_TRUNC | unix.O_CLOEXEC), nil
	case unix.F_GETOWN:
		return uint64(int64(f.Owner)), nil
	case unix.F_SETOWN:
		f.Owner = int(int32(a[2])) // whom SIGIO would go to: none is sent
		return 0, nil
	case unix.F_SETFL:
		const settable = unix.O_APPEND | unix.O_NONBLOCK | unix.O_ASYNC
		f.Flags = f.Flags&^settable | a[2]&settable
		return 0, nil
	case unix.F_GETLK, unix.F_SETLK, unix.F_SETLKW, fOFDGetlk, fOFDSetlk, fOFDSetlkw:
		return t.fcntlLock(f, a[1], a[2])
	case unix.F_ADD_SEALS, unix.F_GET_SEALS:
		return t.fcntlSeals(f, a[1], a[2])
	}
	return 0, unix.EINVAL
}

func (t *thread) dup3(oldfd, newfd, flags uint64, dup2 bool) (uint64, error) {
	f, err := t.proc.fds.Get(oldfd)
	if err != nil {
		return 0, err
	}
	switch {
	case newfd >= vfs.MaxFDs:
		return 0, unix.EBADF
	case oldfd == newfd && dup2:
		return newfd, nil
	case oldfd == newfd || flags&^unix.O_CLOEXEC != 0:
		return 0, unix.EINVAL
	}
	t.proc.closeFD(int(newfd))
	t.proc.fds.Set(int(newfd), f, flags&unix.O_CLOEXEC != 0)
	return newfd, nil
}

func sysGetdents64(t *thread, a args) (uint64, error) {
	f, err := t.proc.fds.Get(a[0])
	if err != nil {
		return 0, err
	}
	dir := f.Node()
	if dir == nil || !dir.Dir {
		return 0, unix.ENOTDIR
	}
	listed, err := t.k.fs.List(dir)
	if err != nil {
		return 0, err
	}
	names := append([]string{".", ".."}, listed...)
	var out []byte
	for ; f.DirPos < len(names); f.DirPos++ {
		name := names[f.DirPos]
		ino, typ := dir.Ino, uint8(unix.DT_DIR)
		if c, ok := dir.Child(name); ok {
			ino, typ = c.Ino, uint8(c.Type()>>12) // DT_* is S_IFMT's bits
		}
		reclen := (19 + len(name) + 1 + 7) &^ 7
		if uint64(len(out)+reclen) > min(a[2], maxIO) {
			if len(out) == 0 {
				return 0, unix.EINVAL
			}
			break
		}
		rec := make([]byte, reclen)
		binary.LittleEndian.PutUint64(rec, ino)
		binary.LittleEndian.PutUint64(rec[8:], uint64(f.DirPos+1)) // d_off: the next entry's position
		binary.LittleEndian.PutUint16(rec[16:], uint16(reclen))
		rec[18] = typ
		copy(rec[19:], name)
		out = append(out, rec...)
	}
	return uint64(len(out)), memErr(t.proc.as.Write(a[1], out))
}

// parentOf resolves a path argument to the entry it creates, removes or
// renames.
func (t *thread) parentOf(dirfd, va uint64) (vfs.Entry, error) {
	p, err := t.path(dirfd, va)
	if err != nil {
		return vfs.Entry{}, err
	}
	return t.k.fs.Parent(p)
}

// newEntry is the entry the path at (dirfd, va) names for link or
// symlink to make: EEXIST for a path that names none to make (the root,
// "." or "..") or ends in a slash, as Linux answers both.
func (t *thread) newEntry(dirfd, va uint64) (vfs.Entry, error) {
	e, err := t.parentOf(dirfd, va)
	if err == nil && (!e.Named() || e.Slash) {
		err = unix.EEXIST
	}
	return e, err
}

func sysLink(t *thread, a args) (uint64, error) {
	return sysLinkat(t, args{atFDCWD, a[0], atFDCWD, a[1], 0})
}

// sysLinkat makes a hard link to a file. AT_EMPTY_PATH (linking an open
// file) needs a capability the program has not: ENOENT, as Linux answers
// without it.
func sysLinkat(t *thread, a args) (uint64, error) {
	switch flags := a[4]; {
	case flags&^(unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH) != 0:
		return 0, unix.EINVAL
	case flags&unix.AT_EMPTY_PATH != 0:
		return 0, unix.ENOENT
	}
	n, err := t.nodeAt(a[0], a[1])
	if err != nil {
		return 0, err
	}
	e, err := t.newEntry(a[2], a[3])
	if err != nil {
		return 0, err
	}
	return 0, t.k.fs.Link(n, e)
}

// sysUnlinkat removes a file, or (AT_REMOVEDIR) an empty directory, with
// Linux's errors for the root, "." and "..", and for a trailing slash
// after a file.
func sysUnlinkat(t *thread, a args) (uint64, error) {
	e, err := t.parentOf(a[0], a[1])
	if err != nil {
		return 0, err
	}
	return 0, t.k.fs.Remove(e, a[2]&unix.AT_REMOVEDIR != 0)
}

func sysMkdirat(t *thread, a args) (uint64, error) {
	p, err := t.path(a[0], a[1])
	if err != nil {
		return 0, err
	}
	if len(p) >= unix.PathMax {
		// Reached from a directory descriptor, deeper than a path can
		// name: a directory here is found by its path.
		return 0, unix.ENAMETOOLONG
	}
	e, err := t.k.fs.Parent(p)
	if err != nil {
		return 0, err
	}
	return 0, t.k.fs.Mkdir(e, uint32(a[2])&0o777&^t.proc.umask)
}

func sysUmask(t *thread, a args) (uint64, error) {
	old := t.proc.umask
	t.proc.umask = uint32(a[0]) & 0o777
	return uint64(old), nil
}

func sysChmod(t *thread, a args) (uint64, error) { return sysFchmodat(t, args{atFDCWD, a[0], a[1], 0}) }

// sysFchmodat changes a file's permission bits (it takes no flags;
// fchmodat2 does).
func sysFchmodat(t *thread, a args) (uint64, error) {
	n, err := t.nodeAt(a[0], a[1])
	if err != nil {
		return 0, err
	}
	return 0, t.chmod(n, a[2])
}

// sysFchmod changes the permission bits of an open file's node; a pipe's
// or another file without one keeps none to change.
func sysFchmod(t *thread, a args) (uint64, error) {
	f, err := t.proc.fds.Get(a[0])
	if err != nil {
		return 0, err
	}
	if n := f.Node(); n != nil {
		return 0, t.chmod(n, a[1])
	}
	return 0, nil
}

// chmod gives n the permission bits of mode, if the user owns n (EPERM
// otherwise).
func (t *thread) chmod(n *node, mode uint64) error {
	if !t.k.fs.Owns(n) {
		return unix.EPERM
	}
	n.Mode = uint32(mode) & 0o7777
	t.k.fs.Changed(n)
	return nil
}

// sysFaccessat (and faccessat2, whose flags the program's one identity
// makes moot) checks the user's rights to a file, as its open or exec
// would.
func sysFaccessat(t *thread, a args) (uint64, error) {
	if a[2]&^7 != 0 {
		return 0, unix.EINVAL
	}
	n, err := t.nodeAt(a[0], a[1])
	if err != nil {
		return 0, err
	}
	return 0, t.k.fs.Access(n, uint32(a[2]))
}

// sysReadlinkat reads a symbolic link, or one /proc makes. Its size is an
// int, and one not positive is EINVAL before the path is read.
func sysReadlinkat(t *thread, a args) (uint64, error) {
	size := int32(a[3])
	if size <= 0 {
		return 0, unix.EINVAL
	}
	p, err := t.path(a[0], a[1])
	if err != nil {
		return 0, err
	}
	target, ok, err := t.procReadlink(p)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		n, err := t.walk(p, false)
		if err != nil {
			return 0, err
		}
		if !n.IsSymlink() {
			return 0, unix.EINVAL
		}
		target = n.Link
	}
	n := min(uint64(len(target)), uint64(size))
	return n, memErr(t.proc.as.Write(a[2], []byte(target)[:n]))
}

func sysSymlink(t *thread, a args) (uint64, error) { return sysSymlinkat(t, args{a[0], atFDCWD, a[1]}) }

// sysSymlinkat makes a symbolic link: ENOENT for an empty target, as
// Linux.
func sysSymlinkat(t *thread, a args) (uint64, error) {
	target, err := t.proc.as.ReadString(a[0], unix.PathMax)
	if err != nil {
		return 0, memErr(err)
	}
	if target == "" {
		return 0, unix.ENOENT
	}
	e, err := t.newEntry(a[1], a[2])
	if err != nil {
		return 0, err
	}
	return 0, t.k.fs.Symlink(e, target)
}

// sysGetcwd is the working directory's path; ENOENT once it is removed.
func sysGetcwd(t *thread, a args) (uint64, error) {
	dir := "/"
	if n := t.proc.cwd; n != nil {
		p, ok := t.k.fs.DirPath(n)
		if !ok {
			return 0, unix.ENOENT
		}
		dir = cmp.Or(p, "/")
	}
	b := append([]byte(dir), 0)
	if uint64(len(b)) > a[1] {
		return 0, unix.ERANGE
	}
	return uint64(len(b)), memErr(t.proc.as.Write(a[0], b))
}

// nodeAt is the node at the path argument at va (path, then lookup).
func (t *thread) nodeAt(dirfd, va uint64) (*node, error) {
	p, err := t.path(dirfd, va)
	if err != nil {
		return nil, err
	}
	return t.lookup(p)
}

// lookup finds the node at the absolute path p, following links, and
// /proc/self/exe to the process's executable.
func (t *thread) lookup(p string) (*node, error) { return t.walk(p, true) }

// walk finds the node at the absolute path p, following a link at its end
// if follow says so. The links /proc makes are always followed:
// /proc/self/exe to the process's executable (exec runs the target's
// path too), cwd to its working directory, and fd/N, however reached
// (/dev/fd/N, /dev/stdin), to the file of N (procFDEntry).
func (t *thread) walk(p string, follow bool) (*node, error) {
	q, of := t.procPath(p)
	switch {
	case q == "/proc/self/cwd" && of.proc.cwd != nil:
		return of.proc.cwd, nil
	case q == "/proc/self/exe":
		return t.k.fs.Resolve(of.proc.exe, follow)
	case of != t:
		// Another process's: its descriptors, not the caller's.
		if f, ok := of.fdEntry(q); ok {
			switch {
			case f == nil:
				return nil, unix.ENOENT
			case f.Node() == nil:
				return nil, fdPipe{f}
			}
			return f.Node(), nil
		}
	}
	return t.k.fs.Resolve(q, follow)
}

// selfExe is p, or the executable of the process /proc/PID/exe names if
// p is that (exec follows it too: the path it runs is the target's).
func (t *thread) selfExe(p string) string {
	if q, of := t.procPath(p); q == "/proc/self/exe" {
		return of.proc.exe
	}
	return p
}

func sysChdir(t *thread, a args) (uint64, error) {
	n, err := t.nodeAt(atFDCWD, a[0])
	if err != nil {
		return 0, err
	}
	return 0, t.chdir(n)
}

func sysFchdir(t *thread, a args) (uint64, error) {
	f, err := t.proc.fds.Get(a[0])
	if err != nil {
		return 0, err
	}
	n := f.Node()
	if n == nil {
		return 0, unix.ENOTDIR
	}
	return 0, t.chdir(n)
}

// chdir makes directory n the process's working directory: ENOTDIR for
// a file, EACCES for one the program may not search.
func (t *thread) chdir(n *node) error {
	if !n.Dir {
		return unix.ENOTDIR
	}
	if err := t.k.fs.Access(n, vfs.MayExec); err != nil {
		return err
	}
	t.proc.cwd = n
	return nil
}

func sysPipe(t *thread, a args) (uint64, error) { return sysPipe2(t, args{a[0], 0}) }

func sysPipe2(t *thread, a args) (uint64, error) {
	if a[1]&^(unix.O_CLOEXEC|unix.O_NONBLOCK) != 0 {
		return 0, unix.EINVAL
	}
	r, w, err := vfs.NewPipe(t.k.budget, a[1], t.k.fs.NewIno())
	if err != nil {
		return 0, err
	}
	cloexec := a[1]&unix.O_CLOEXEC != 0
	fds := t.proc.fds
	rfd, err := fds.Install(r, cloexec, 0)
	if err != nil {
		r.Release() // neither end installed
		w.Release()
		return 0, err
	}
	wfd, err := fds.Install(w, cloexec, 0)
	if err != nil {
		w.Release() // the write end, never installed
		fds.Close(rfd)
		return 0, err
	}
	var b [8]byte
	b[0], b[1], b[2], b[3] = byte(rfd), byte(rfd>>8), byte(rfd>>16), byte(rfd>>24)
	b[4], b[5], b[6], b[7] = byte(wfd), byte(wfd>>8), byte(wfd>>16), byte(wfd>>24)
	if err := t.proc.as.Write(a[0], b[:]); err != nil {
		fds.Close(rfd)
		fds.Close(wfd)
		return 0, memErr(err)
	}
	return 0, nil
}

// openAccess is what an open with flags asks of the file.
func openAccess(flags uint64) uint32 {
	var may uint32
	switch flags & unix.O_ACCMODE {
	case unix.O_RDONLY:
		may = vfs.MayRead
	case unix.O_WRONLY:
		may = vfs.MayWrite
	case unix.O_RDWR:
		may = vfs.MayRead | vfs.MayWrite
	}
	if flags&unix.O_TRUNC != 0 {
		may |= vfs.MayWrite
	}
	return may
}
