package linux

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/linux/vfs"
)

// Advisory locks: fcntl's byte-range locks (POSIX, owned by the process
// and dropped when it closes any descriptor of the file; OFD, owned by
// the open file description) and flock. The locks themselves are vfs's.

// flockSize is struct flock on x86-64.
const flockSize = 32

// The OFD lock commands (F_OFD_GETLK ...), which x/sys/unix lacks.
const (
	fOFDGetlk  = 36
	fOFDSetlk  = 37
	fOFDSetlkw = 38
)

// lockWait is what a thread waiting for a lock (F_SETLKW, flock without
// LOCK_NB) blocks on: a change of the node's locks. A process's F_SETLKW
// keeps its request too, which deadlock detection follows.
type lockWait struct {
	n   *node
	req *lockRequest // nil for an OFD lock or flock
}

// lockRequest is a POSIX lock a process waits for: [from, to] of a node,
// exclusive if write.
type lockRequest struct {
	p        *process
	write    bool
	from, to uint64
}

// maxDeadlockHops bounds the chain of waiting owners followed, as Linux's
// MAX_DEADLK_ITERATIONS does.
const maxDeadlockHops = 10

// wouldDeadlock reports whether process p's waiting for r on n would
// close a cycle of POSIX lock waits (posix_locks_deadlock): the owner of
// the lock in the way waits for a lock whose owner waits … for one of
// p's.
func (k *Kernel) wouldDeadlock(n *node, r lockRequest) bool {
	blocker, ok := n.Conflict(r.p, r.write, r.from, r.to)
	for range maxDeadlockHops {
		q, isProcess := blocker.Owner.(*process)
		switch {
		case !ok || !isProcess:
			return false
		case q == r.p:
			return true
		}
		w := k.lockRequestOf(q)
		if w == nil {
			return false
		}
		blocker, ok = w.n.Conflict(q, w.req.write, w.req.from, w.req.to)
	}
	return false
}

// lockRequestOf is the POSIX lock wait of a thread of process q, nil if
// none waits for one.
func (k *Kernel) lockRequestOf(q *process) *lockWait {
	for _, t := range k.threads {
		if w, ok := t.waitKey.(lockWait); ok && t.proc == q && t.state == blocked && w.req != nil {
			return &w
		}
	}
	return nil
}

// saved: a lock wait is never in a checkpoint — another owner holds the
// lock it waits for, and a state with locks held is not saved (SaveState)
// — so it is saved as a kind a restore refuses, should that ever change.
func (lockWait) saved(*saver, *thread) savedWait { return savedWait{Kind: waitLock} }

// blockOnLock blocks t until n's locks change (waiting for req, if a
// POSIX lock); its call then runs again.
func (t *thread) blockOnLock(n *node, req *lockRequest) error {
	q := n.LockQueue()
	q.Register(t, vfs.AllEvents)
	t.lockQueue = q
	return t.blockOn(lockWait{n, req})
}

func sysFlock(t *thread, a args) (uint64, error) {
	f, err := t.proc.fds.Get(a[0])
	if err != nil {
		return 0, err
	}
	op := int(a[1]) &^ unix.LOCK_NB
	if op != unix.LOCK_SH && op != unix.LOCK_EX && op != unix.LOCK_UN {
		return 0, unix.EINVAL
	}
	n := f.Node()
	if n == nil {
		return 0, nil // a pipe's: nothing to lock against
	}
	err = n.Flock(f, op)
	switch {
	case err == vfs.ErrWouldBlock && a[1]&unix.LOCK_NB != 0:
		return 0, unix.EWOULDBLOCK
	case err == vfs.ErrWouldBlock:
		return 0, t.blockOnLock(n, nil)
	}
	return 0, err
}

// fcntlLock serves F_GETLK, F_SETLK, F_SETLKW and their OFD forms for the
// open file f, the struct flock at va.
func (t *thread) fcntlLock(f *openFile, cmd, va uint64) (uint64, error) {
	var b [flockSize]byte
	if err := t.proc.as.Read(va, b[:]); err != nil {
		return 0, memErr(err)
	}
	le := binary.LittleEndian
	typ, whence := int16(le.Uint16(b[0:])), int16(le.Uint16(b[2:]))
	start, length, pid := int64(le.Uint64(b[8:])), int64(le.Uint64(b[16:])), int32(le.Uint32(b[24:]))
	ofd := cmd == fOFDGetlk || cmd == fOFDSetlk || cmd == fOFDSetlkw
	if ofd && pid != 0 {
		return 0, unix.EINVAL
	}
	n := f.Node()
	if n == nil {
		return 0, unix.EBADF // a pipe or the console: Linux locks inodes of files
	}
	var base int64
	switch whence {
	case unix.SEEK_SET:
	case unix.SEEK_CUR:
		base = f.Off
	case unix.SEEK_END:
		base = n.Size()
	default:
		return 0, unix.EINVAL
	}
	from, to, err := lockRange(base, start, length)
	if err != nil {
		return 0, err
	}
	var owner vfs.LockOwner = t.proc
	ownerPID := t.proc.pid
	if ofd {
		owner, ownerPID = f, -1
	}
	write := typ == unix.F_WRLCK
	switch typ {
	case unix.F_RDLCK, unix.F_WRLCK, unix.F_UNLCK:
	default:
		return 0, unix.EINVAL
	}
	if cmd == unix.F_GETLK || cmd == fOFDGetlk {
		if typ == unix.F_UNLCK {
			return 0, unix.EINVAL
		}
		l, ok := n.Conflict(owner, write, from, to)
		if !ok {
			le.PutUint16(b[0:], uint16(unix.F_UNLCK))
		} else {
			le.PutUint16(b[0:], uint16(unix.F_RDLCK))
			if l.Write {
				le.PutUint16(b[0:], uint16(unix.F_WRLCK))
			}
			le.PutUint16(b[2:], unix.SEEK_SET)
			le.PutUint64(b[8:], l.Start)
			le.PutUint64(b[16:], 0)
			if l.End != vfs.LockToEnd {
				le.PutUint64(b[16:], l.End-l.Start+1)
			}
			le.PutUint32(b[24:], uint32(int32(l.PID)))
		}
		return 0, memErr(t.proc.as.Write(va, b[:]))
	}
	switch {
	case typ == unix.F_RDLCK && !f.Readable(), typ == unix.F_WRLCK && !f.Writable():
		return 0, unix.EBADF
	}
	err = n.SetLock(t.k.budget, owner, ownerPID, typ == unix.F_UNLCK, write, from, to)
	switch {
	case err == vfs.ErrWouldBlock && cmd == fOFDSetlkw:
		return 0, t.blockOnLock(n, nil)
	case err == vfs.ErrWouldBlock && cmd == unix.F_SETLKW:
		req := &lockRequest{t.proc, write, from, to}
		if t.k.wouldDeadlock(n, *req) {
			return 0, unix.EDEADLK
		}
		return 0, t.blockOnLock(n, req)
	case err == vfs.ErrWouldBlock:
		return 0, unix.EAGAIN
	}
	return 0, err
}

// lockRange is the bytes a struct flock names: from base+start, length
// bytes (0: to the end of the file; negative: the bytes before), as
// [from, to]; EINVAL before the file's start, EOVERFLOW past off_t.
func lockRange(base, start, length int64) (from, to uint64, err error) {
	at := base + start
	if start > 0 && at < base || start < 0 && at > base {
		return 0, 0, unix.EOVERFLOW
	}
	switch {
	case length == 0:
		if at < 0 {
			return 0, 0, unix.EINVAL
		}
		return uint64(at), vfs.LockToEnd, nil
	case length > 0:
		end := at + length - 1
		if at < 0 {
			return 0, 0, unix.EINVAL
		}
		if end < at {
			return 0, 0, unix.EOVERFLOW
		}
		return uint64(at), uint64(end), nil
	}
	first := at + length
	if first < 0 || first > at {
		return 0, 0, unix.EINVAL
	}
	return uint64(first), uint64(at - 1), nil
}

// closeFD closes descriptor fd of p: its POSIX locks on the file go with
// it, whichever descriptor took them, as on Linux.
func (p *process) closeFD(fd int) {
	e, ok := p.fds[fd]
	if !ok {
		return
	}
	p.fds.Close(fd)
	p.dropLocks(e.File)
}

// dropLocks drops p's POSIX locks on f's file.
func (p *process) dropLocks(f *openFile) {
	if n := f.Node(); n != nil {
		n.ReleaseLocks(p)
	}
}

// locksHeld reports whether any file of the program is locked: a
// checkpoint does not hold locks yet, so none is taken then.
func (k *Kernel) locksHeld() bool {
	for _, t := range k.threads {
		for _, e := range t.proc.fds {
			if n := e.File.Node(); n != nil && n.HasLocks() {
				return true
			}
		}
	}
	return false
}
