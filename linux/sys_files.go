package linux

import (
	"encoding/binary"
	"math"

	"golang.org/x/sys/unix"
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
		var b [8]byte
		if err := t.proc.as.read(a[2], b[:]); err != nil {
			return 0, memErr(err)
		}
		at = int64(binary.LittleEndian.Uint64(b[:]))
	}
	fds := t.proc.fds
	in, err := fds.get(a[1])
	switch {
	case err != nil:
		return 0, err
	case !in.readable():
		return 0, unix.EBADF
	case a[2] != 0 && !in.seekable():
		return 0, unix.ESPIPE
	case a[2] == 0:
		at = in.off
	}
	if err := verifyArea(at, count); err != nil {
		return 0, err
	}
	count = min(count, maxRWCount) // before the output's check
	out, err := fds.get(a[0])
	switch {
	case err != nil:
		return 0, err
	case !out.writable():
		return 0, unix.EBADF
	case out.pipe == nil && out.flags&unix.O_APPEND != 0:
		return 0, unix.EINVAL // splice refuses to append
	case in.node == nil || in.node.dir:
		return 0, unix.EINVAL // nothing to splice from
	}
	if out.seekable() {
		if err := verifyArea(out.off, count); err != nil {
			return 0, err
		}
	}
	buf := make([]byte, min(count, maxIO))
	n, err := t.k.readFile(in, buf, at)
	if err != nil {
		return 0, err
	}
	w, err := t.k.writeFile(out, buf[:n], out.off)
	if err != nil {
		return 0, err
	}
	if out.seekable() {
		out.off += int64(w)
	}
	if a[2] != 0 {
		return uint64(w), memErr(t.proc.as.putUint64(a[2], uint64(at+int64(w))))
	}
	in.off = at + int64(w)
	return uint64(w), nil
}

const atFDCWD = ^uint64(99) // AT_FDCWD, -100

// maxIO bounds what one read or write moves; the program loops for more,
// as it must for Linux too.
const maxIO = 1 << 20

// Limits Linux puts on the offsets and counts of reads and writes.
const (
	// maxFileSize is the largest offset and file size, tmpfs's
	// (MAX_LFS_FILESIZE): the program's files are in memory. Before that
	// the 1 GiB of all files runs out (ENOSPC).
	maxFileSize = math.MaxInt64
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

// path reads a path argument. Relative paths resolve from dirfd, which
// must be AT_FDCWD (the working directory is /) or an open directory.
func (t *thread) path(dirfd, va uint64) (string, error) {
	p, err := t.proc.as.readString(va, unix.PathMax)
	if err != nil {
		return "", memErr(err)
	}
	if p == "" {
		return "", unix.ENOENT
	}
	if p[0] == '/' || dirfd == atFDCWD {
		return p, nil
	}
	d, err := t.proc.fds.get(dirfd)
	if err != nil {
		return "", err
	}
	if d.node == nil || !d.node.dir {
		return "", unix.ENOTDIR
	}
	dir, ok := t.k.dirPath(d.node)
	if !ok {
		return "", unix.ENOENT
	}
	return dir + "/" + p, nil
}

// dirPath finds the path of directory n (directories are few and shallow).
func (k *Kernel) dirPath(n *node) (string, bool) {
	var walk func(at *node, p string) (string, bool)
	walk = func(at *node, p string) (string, bool) {
		if at == n {
			return p, true
		}
		for name, c := range at.children {
			if c.dir {
				if found, ok := walk(c, p+"/"+name); ok {
					return found, true
				}
			}
		}
		return "", false
	}
	return walk(k.fs.root, "")
}

func (k *Kernel) readFile(f *openFile, b []byte, off int64) (int, error) {
	switch {
	case !f.readable():
		return 0, unix.EBADF
	case f.pipe != nil:
		return f.pipe.read(k, f, b)
	case f.console:
		return 0, nil // stdin is empty
	case f.node.dir:
		return 0, unix.EISDIR
	case f.node.dev != nil:
		return f.node.dev.read(k, b)
	}
	if off >= int64(len(f.node.data)) {
		return 0, nil
	}
	return copy(b, f.node.data[off:]), nil
}

func (k *Kernel) writeFile(f *openFile, b []byte, off int64) (int, error) {
	switch {
	case !f.writable():
		return 0, unix.EBADF
	case f.pipe != nil:
		return f.pipe.write(k, f, b)
	case f.console:
		return k.m.Console().Write(b)
	case f.node.dev != nil:
		return f.node.dev.write(b)
	case len(b) == 0:
		return 0, nil // nothing written, the file not extended
	case off >= maxFileSize:
		return 0, unix.EFBIG
	}
	// generic_write_checks: what fits below the largest offset.
	b = b[:min(int64(len(b)), maxFileSize-off)]
	n := f.node
	end := off + int64(len(b))
	if end > int64(len(n.data)) {
		if err := k.resize(n, end); err != nil {
			return 0, err
		}
	}
	n.written = true
	return copy(n.data[off:], b), nil
}

// seekable reports whether f has a position (Linux's FMODE_LSEEK and
// FMODE_PREAD): a file, directory or device has; a pipe or the console
// has not.
func (f *openFile) seekable() bool { return f.node != nil }

// rw moves up to n bytes between the guest buffer at va and the file fd:
// at *pos (pread, pwrite), or at and advancing the file's offset (pos
// nil). Its arguments are checked in the order Linux checks them.
func (t *thread) rw(fd, va, n uint64, pos *int64, write bool) (uint64, error) {
	if pos != nil && *pos < 0 {
		return 0, unix.EINVAL // before the descriptor
	}
	f, err := t.proc.fds.get(fd)
	switch {
	case err != nil:
		return 0, err
	case pos != nil && !f.seekable():
		return 0, unix.ESPIPE
	case write && !f.writable(), !write && !f.readable():
		return 0, unix.EBADF
	case !userRange(va, n):
		return 0, unix.EFAULT
	}
	at := f.off
	if pos != nil {
		at = *pos
	}
	if f.seekable() {
		if err := verifyArea(at, n); err != nil {
			return 0, err
		}
	}
	if n == 0 && f.pipe != nil {
		return 0, nil // neither blocks nor raises SIGPIPE
	}
	if write && f.flags&unix.O_APPEND != 0 && f.node != nil {
		at = int64(len(f.node.data)) // pwrite too, as on Linux
	}
	b := make([]byte, min(n, maxIO))
	var done int
	if write {
		if err := t.proc.as.read(va, b); err != nil {
			return 0, memErr(err)
		}
		done, err = t.k.writeFile(f, b, at)
	} else {
		done, err = t.k.readFile(f, b, at)
		if err == nil {
			err = memErr(t.proc.as.write(va, b[:done]))
		}
	}
	if err != nil {
		return 0, err
	}
	if pos == nil && f.seekable() {
		f.off = at + int64(done)
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

// vectored reads or writes an iovec array. The array is checked whole
// first, as Linux's import_iovec does: a segment whose length is negative
// as a ssize_t is EINVAL, one outside user space EFAULT, and the total is
// clamped to MAX_RW_COUNT. Then it moves segment by segment, stopping at a
// short transfer.
func (t *thread) vectored(fd, va, count uint64, write bool) (uint64, error) {
	f, err := t.proc.fds.get(fd)
	switch {
	case err != nil:
		return 0, err
	case write && !f.writable(), !write && !f.readable():
		return 0, unix.EBADF
	case count == 0:
		return 0, nil
	case count > maxIOV:
		return 0, unix.EINVAL
	}
	raw := make([]byte, count*16)
	if err := t.proc.as.read(va, raw); err != nil {
		return 0, memErr(err)
	}
	segs := make([]iovec, count)
	for i := range segs {
		segs[i] = iovec{binary.LittleEndian.Uint64(raw[i*16:]), binary.LittleEndian.Uint64(raw[i*16+8:])}
		if int64(segs[i].len) < 0 {
			return 0, unix.EINVAL
		}
	}
	var total uint64
	for i := range segs {
		s := &segs[i]
		if count == 1 {
			s.len = min(s.len, maxRWCount) // one segment is clamped before its range is checked (import_ubuf)
		}
		if !userRange(s.base, s.len) {
			return 0, unix.EFAULT
		}
		s.len = min(s.len, maxRWCount-total)
		total += s.len
	}
	if total == 0 {
		return 0, nil
	}
	if f.seekable() {
		if err := verifyArea(f.off, total); err != nil {
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

// sysLseek moves a file's offset as tmpfs does (generic_file_llseek_size
// up to MAX_LFS_FILESIZE; a directory's as dcache_dir_lseek). A device's
// offset stays 0 (null_lseek); a pipe or the console has none.
func sysLseek(t *thread, a args) (uint64, error) {
	f, err := t.proc.fds.get(a[0])
	if err != nil {
		return 0, err
	}
	off, whence := int64(a[1]), a[2]
	switch {
	case whence > unix.SEEK_HOLE: // SEEK_MAX
		return 0, unix.EINVAL
	case !f.seekable():
		return 0, unix.ESPIPE
	case f.node.dev != nil:
		return 0, nil
	case f.node.dir:
		return seekDir(f, off, whence)
	}
	size := int64(len(f.node.data))
	switch whence {
	case unix.SEEK_CUR:
		if off == 0 {
			return uint64(f.off), nil
		}
		off += f.off // wraps negative past the largest offset, as in C
	case unix.SEEK_END:
		off += size
	case unix.SEEK_DATA, unix.SEEK_HOLE:
		// A file here has no holes: its data runs to its end.
		if off < 0 || off >= size {
			return 0, unix.ENXIO
		}
		if whence == unix.SEEK_HOLE {
			off = size
		}
	}
	if off < 0 {
		return 0, unix.EINVAL
	}
	f.off = off
	return uint64(off), nil
}

// seekDir moves a directory's position, which getdents reads from.
func seekDir(f *openFile, off int64, whence uint64) (uint64, error) {
	switch whence {
	case unix.SEEK_CUR:
		off += int64(f.dirPos)
	case unix.SEEK_SET:
	default:
		return 0, unix.EINVAL
	}
	if off < 0 {
		return 0, unix.EINVAL
	}
	f.dirPos = int(min(off, 1<<30))
	return uint64(off), nil
}

func sysClose(t *thread, a args) (uint64, error) {
	if _, err := t.proc.fds.get(a[0]); err != nil {
		return 0, err
	}
	t.proc.fds.close(t.k, int(a[0]))
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
		e, err := t.k.fs.parent(p)
		if err != nil {
			return 0, err
		}
		if e.slash && e.named() {
			return 0, unix.EISDIR
		}
	}
	n, err := t.k.fs.lookup(p)
	switch {
	case err == unix.ENOENT && creat:
		if n, err = t.k.fs.add(p, nil, uint32(a[3])&0o777); err != nil {
			return 0, unix.ENOSPC
		}
		n.written = true
	case err != nil:
		return 0, err
	case creat && flags&unix.O_EXCL != 0:
		return 0, unix.EEXIST
	case creat && n.dir:
		return 0, unix.EISDIR
	case flags&unix.O_DIRECTORY != 0 && !n.dir:
		return 0, unix.ENOTDIR
	case n.dir && flags&unix.O_ACCMODE != unix.O_RDONLY:
		return 0, unix.EISDIR
	}
	if flags&unix.O_TRUNC != 0 && !n.dir && n.dev == nil && flags&unix.O_ACCMODE != unix.O_RDONLY {
		t.k.budget.release(fileBytes, int64(len(n.data)))
		t.k.moveContents(n, nil)
		n.written = true
	}
	fd, err := t.proc.fds.install(&openFile{node: n, path: p, flags: flags}, flags&unix.O_CLOEXEC != 0, 0)
	if err == nil {
		n.opens++
	}
	return uint64(fd), err
}

// sysIoctl: no descriptor is a terminal.
func sysIoctl(t *thread, a args) (uint64, error) {
	if _, err := t.proc.fds.get(a[0]); err != nil {
		return 0, err
	}
	return 0, unix.ENOTTY
}

func sysFcntl(t *thread, a args) (uint64, error) {
	f, err := t.proc.fds.get(a[0])
	if err != nil {
		return 0, err
	}
	e := t.proc.fds[int(a[0])]
	switch a[1] {
	case unix.F_DUPFD, unix.F_DUPFD_CLOEXEC:
		if a[2] >= maxFDs {
			return 0, unix.EINVAL
		}
		fd, err := t.proc.fds.install(f, a[1] == unix.F_DUPFD_CLOEXEC, int(a[2]))
		return uint64(fd), err
	case unix.F_GETFD:
		if e.cloexec {
			return unix.FD_CLOEXEC, nil
		}
		return 0, nil
	case unix.F_SETFD:
		e.cloexec = a[2]&unix.FD_CLOEXEC != 0
		return 0, nil
	case unix.F_GETFL:
		return f.flags &^ (unix.O_CREAT | unix.O_EXCL | unix.O_TRUNC | unix.O_CLOEXEC), nil
	case unix.F_SETFL:
		const settable = unix.O_APPEND | unix.O_NONBLOCK
		f.flags = f.flags&^settable | a[2]&settable
		return 0, nil
	}
	return 0, unix.EINVAL
}

func (t *thread) dup3(oldfd, newfd, flags uint64, dup2 bool) (uint64, error) {
	f, err := t.proc.fds.get(oldfd)
	if err != nil {
		return 0, err
	}
	switch {
	case newfd >= maxFDs:
		return 0, unix.EBADF
	case oldfd == newfd && dup2:
		return newfd, nil
	case oldfd == newfd || flags&^unix.O_CLOEXEC != 0:
		return 0, unix.EINVAL
	}
	t.proc.fds.close(t.k, int(newfd))
	f.refs++
	t.proc.fds[int(newfd)] = &fdEntry{file: f, cloexec: flags&unix.O_CLOEXEC != 0}
	return newfd, nil
}

func sysGetdents64(t *thread, a args) (uint64, error) {
	f, err := t.proc.fds.get(a[0])
	if err != nil {
		return 0, err
	}
	if f.node == nil || !f.node.dir {
		return 0, unix.ENOTDIR
	}
	names := append([]string{".", ".."}, f.node.names()...)
	var out []byte
	for ; f.dirPos < len(names); f.dirPos++ {
		name := names[f.dirPos]
		ino, typ := f.node.ino, uint8(unix.DT_DIR)
		if c, ok := f.node.children[name]; ok {
			ino = c.ino
			if !c.dir {
				typ = unix.DT_REG
			}
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
		binary.LittleEndian.PutUint64(rec[8:], uint64(f.dirPos+1)) // d_off: the next entry's position
		binary.LittleEndian.PutUint16(rec[16:], uint16(reclen))
		rec[18] = typ
		copy(rec[19:], name)
		out = append(out, rec...)
	}
	return uint64(len(out)), memErr(t.proc.as.write(a[1], out))
}

// parentOf resolves a path argument to the entry it creates, removes or
// renames.
func (t *thread) parentOf(dirfd, va uint64) (entry, error) {
	p, err := t.path(dirfd, va)
	if err != nil {
		return entry{}, err
	}
	return t.k.fs.parent(p)
}

// sysUnlinkat removes a file, or (AT_REMOVEDIR) an empty directory, with
// Linux's errors for the root, "." and "..", and for a trailing slash
// after a file.
func sysUnlinkat(t *thread, a args) (uint64, error) {
	e, err := t.parentOf(a[0], a[1])
	if err != nil {
		return 0, err
	}
	rmdir := a[2]&unix.AT_REMOVEDIR != 0
	switch {
	case !rmdir && !e.named():
		return 0, unix.EISDIR
	case rmdir && e.name == ".":
		return 0, unix.EINVAL
	case rmdir && e.name == "..":
		return 0, unix.ENOTEMPTY
	case rmdir && e.name == "":
		return 0, unix.EBUSY
	}
	n, ok := e.dir.children[e.name]
	switch {
	case !ok:
		return 0, unix.ENOENT
	case n.dir && !rmdir:
		return 0, unix.EISDIR
	case n.dir && len(n.children) > 0:
		return 0, unix.ENOTEMPTY
	case !n.dir && (rmdir || e.slash):
		return 0, unix.ENOTDIR
	}
	delete(e.dir.children, e.name)
	t.k.unlinked(n)
	return 0, nil
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
	e, err := t.k.fs.parent(p)
	if err != nil {
		return 0, err
	}
	if _, ok := e.dir.children[e.name]; ok || !e.named() {
		return 0, unix.EEXIST
	}
	n, err := t.k.fs.newNode(true, uint32(a[2])&0o777)
	if err != nil {
		return 0, err
	}
	e.dir.children[e.name] = n
	return 0, nil
}

func sysFaccessat(t *thread, a args) (uint64, error) {
	p, err := t.path(a[0], a[1])
	if err != nil {
		return 0, err
	}
	n, err := t.k.fs.lookup(p)
	if err != nil {
		return 0, err
	}
	if a[2]&unix.X_OK != 0 && !n.dir && n.mode&0o111 == 0 {
		return 0, unix.EACCES
	}
	return 0, nil
}

// sysReadlinkat reads /proc/self/exe, the one link there is. Its size is
// an int, and one not positive is EINVAL before the path is read.
func sysReadlinkat(t *thread, a args) (uint64, error) {
	size := int32(a[3])
	if size <= 0 {
		return 0, unix.EINVAL
	}
	p, err := t.path(a[0], a[1])
	if err != nil {
		return 0, err
	}
	if p != "/proc/self/exe" {
		if _, err := t.k.fs.lookup(p); err != nil {
			return 0, err
		}
		return 0, unix.EINVAL // not a link: there are none
	}
	target := []byte(t.k.prog.Path)
	n := min(uint64(len(target)), uint64(size))
	return n, memErr(t.proc.as.write(a[2], target[:n]))
}

func sysGetcwd(t *thread, a args) (uint64, error) {
	if a[1] < 2 {
		return 0, unix.ERANGE
	}
	return 2, memErr(t.proc.as.write(a[0], []byte("/\x00")))
}

// sysChdir: the working directory stays /; changing it is refused.
func sysChdir(t *thread, a args) (uint64, error) {
	p, err := t.path(atFDCWD, a[0])
	if err != nil {
		return 0, err
	}
	n, err := t.k.fs.lookup(p)
	switch {
	case err != nil:
		return 0, err
	case !n.dir:
		return 0, unix.ENOTDIR
	case n != t.k.fs.root:
		return 0, unix.EACCES
	}
	return 0, nil
}

func sysPipe(t *thread, a args) (uint64, error) { return sysPipe2(t, args{a[0], 0}) }

func sysPipe2(t *thread, a args) (uint64, error) {
	if a[1]&^(unix.O_CLOEXEC|unix.O_NONBLOCK) != 0 {
		return 0, unix.EINVAL
	}
	// Each open pipe charges its capacity, as Linux accounts a user's
	// pipe pages: past the soft limit a new pipe is small, past the hard
	// one (the budget's) pipe fails with ENFILE.
	p := &pipe{capacity: pipeCapacity, readers: 1, writers: 1}
	if t.k.budget[pipeBytes]+pipeCapacity > pipeSoftBytes {
		p.capacity = smallPipeCapacity
	}
	if err := t.k.budget.charge(pipeBytes, int64(p.capacity)); err != nil {
		return 0, err
	}
	cloexec := a[1]&unix.O_CLOEXEC != 0
	r := &openFile{pipe: p, flags: unix.O_RDONLY | a[1]&unix.O_NONBLOCK}
	w := &openFile{pipe: p, flags: unix.O_WRONLY | a[1]&unix.O_NONBLOCK}
	fds := t.proc.fds
	rfd, err := fds.install(r, cloexec, 0)
	if err != nil {
		t.k.budget.release(pipeBytes, int64(p.capacity))
		return 0, err
	}
	wfd, err := fds.install(w, cloexec, 0)
	if err != nil {
		p.closeEnd(t.k, true) // the write end, never installed
		fds.close(t.k, rfd)
		return 0, err
	}
	var b [8]byte
	b[0], b[1], b[2], b[3] = byte(rfd), byte(rfd>>8), byte(rfd>>16), byte(rfd>>24)
	b[4], b[5], b[6], b[7] = byte(wfd), byte(wfd>>8), byte(wfd>>16), byte(wfd>>24)
	if err := t.proc.as.write(a[0], b[:]); err != nil {
		fds.close(t.k, rfd)
		fds.close(t.k, wfd)
		return 0, memErr(err)
	}
	return 0, nil
}
