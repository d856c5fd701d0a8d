package linux

import (
	"encoding/binary"
	"errors"

	"github.com/reprise-vm/reprise/linux/vfs"
	"golang.org/x/sys/unix"
)

func sysStat(t *thread, a args) (uint64, error) {
	return sysNewfstatat(t, args{atFDCWD, a[0], a[1], 0})
}

func sysLstat(t *thread, a args) (uint64, error) {
	return sysNewfstatat(t, args{atFDCWD, a[0], a[1], unix.AT_SYMLINK_NOFOLLOW})
}

// Device numbers the stat calls report.
const (
	rootDev = 0x801 // the file system
	pipeDev = 0xc   // pipefs: the standard streams
)

// attrs is what the stat calls say of a file.
type attrs struct {
	dev, ino, nlink, rdev uint64
	mode, uid, gid        uint32
	size                  int64
	times                 vfs.Times // zero: the program's epoch
}

// attrsOf describes an open file or a node (f nil).
func (k *Kernel) attrsOf(f *openFile, n *node) attrs {
	if s := socketOf(f); s != nil {
		return attrs{dev: sockDev, ino: s.Ino(), nlink: 1, mode: unix.S_IFSOCK | 0o777, uid: k.proc().cred.euid, gid: k.proc().cred.egid}
	}
	if f != nil && f.IsStream() {
		// A pipe, as when a program's output is piped on the host: the C
		// library buffers it the same way.
		return attrs{dev: pipeDev, ino: f.StreamIno(), nlink: 1, mode: unix.S_IFIFO | 0o600, uid: k.proc().cred.euid, gid: k.proc().cred.egid}
	}
	if f != nil {
		n = f.Node()
	}
	a := attrs{dev: rootDev, ino: n.Ino, nlink: uint64(n.Links()), mode: n.Type() | n.Mode, size: n.Size(),
		uid: n.UID, gid: n.GID, times: n.Times}
	switch {
	case n.Dir:
		a.size = pageSize
	case n.IsDevice():
		a.rdev, a.size = unix.Mkdev(1, n.DeviceMinor()), 0
	}
	return a
}

// timespecs are a file's atime, mtime and ctime, each seconds and
// nanoseconds: the program's epoch where the tree has none.
func (k *Kernel) timespecs(a attrs) [3][2]uint64 {
	epoch := k.prog.Epoch.UnixNano()
	var out [3][2]uint64
	for i, ns := range []int64{a.times.Atime, a.times.Mtime, a.times.Ctime} {
		if ns == 0 {
			ns = epoch
		}
		out[i] = [2]uint64{uint64(floorDiv(ns, 1e9)), uint64(ns - floorDiv(ns, 1e9)*1e9)}
	}
	return out
}

// floorDiv is a/b rounded down (a time before 1970 has a negative
// second and a positive nanosecond).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// stat is struct stat; times are the program's epoch.
func (k *Kernel) stat(a attrs) []byte {
	var b [144]byte
	le := binary.LittleEndian
	le.PutUint64(b[0:], a.dev)
	le.PutUint64(b[8:], a.ino)
	le.PutUint64(b[16:], a.nlink)
	le.PutUint32(b[24:], a.mode)
	le.PutUint32(b[28:], a.uid)
	le.PutUint32(b[32:], a.gid)
	le.PutUint64(b[40:], a.rdev)
	le.PutUint64(b[48:], uint64(a.size))
	le.PutUint64(b[56:], pageSize)
	le.PutUint64(b[64:], uint64((a.size+511)/512))
	for i, ts := range k.timespecs(a) { // atime, mtime, ctime
		le.PutUint64(b[72+16*i:], ts[0])
		le.PutUint64(b[80+16*i:], ts[1])
	}
	return b[:]
}

func sysFstat(t *thread, a args) (uint64, error) {
	f, err := t.proc.fds.Get(a[0])
	if err != nil {
		return 0, err
	}
	return 0, memErr(t.proc.as.Write(a[1], t.k.stat(t.k.attrsOf(f, nil))))
}

// statTarget resolves the stat calls' (dirfd, path, flags) (target).
func (t *thread) statTarget(dirfd, path, flags uint64) (attrs, error) {
	f, n, err := t.target(dirfd, path, flags)
	if err != nil {
		return attrs{}, err
	}
	return t.k.attrsOf(f, n), nil
}

// target resolves the (dirfd, path, flags) of the calls that take
// AT_EMPTY_PATH and AT_SYMLINK_NOFOLLOW: the open file dirfd names for an
// empty path with AT_EMPTY_PATH, else the node at the path, a link at its
// end followed unless AT_SYMLINK_NOFOLLOW.
func (t *thread) target(dirfd, path, flags uint64) (*openFile, *node, error) {
	p, err := t.proc.as.ReadString(path, unix.PathMax)
	if err != nil {
		return nil, nil, memErr(err)
	}
	if p == "" && flags&unix.AT_EMPTY_PATH != 0 {
		f, err := t.proc.fds.Get(dirfd)
		return f, nil, err
	}
	full, err := t.resolve(dirfd, p)
	if err != nil {
		return nil, nil, err
	}
	if flags&unix.AT_SYMLINK_NOFOLLOW != 0 {
		if f, ok := t.fdEntry(full); ok && f != nil {
			return nil, t.fdLink(f), nil
		}
	}
	n, err := t.walk(full, flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	if pipe := (fdPipe{}); errors.As(err, &pipe) {
		return pipe.f, nil, nil // /proc/self/fd/N of a pipe: the pipe itself
	}
	return nil, n, err
}

func sysNewfstatat(t *thread, a args) (uint64, error) {
	at, err := t.statTarget(a[0], a[1], a[3])
	if err != nil {
		return 0, err
	}
	return 0, memErr(t.proc.as.Write(a[2], t.k.stat(at)))
}

// sysStatx fills struct statx with what stat reports.
func sysStatx(t *thread, a args) (uint64, error) {
	at, err := t.statTarget(a[0], a[1], a[2])
	if err != nil {
		return 0, err
	}
	var b [256]byte
	le := binary.LittleEndian
	le.PutUint32(b[0:], unix.STATX_BASIC_STATS)
	le.PutUint32(b[4:], pageSize)
	le.PutUint32(b[16:], uint32(at.nlink))
	le.PutUint32(b[20:], at.uid)
	le.PutUint32(b[24:], at.gid)
	le.PutUint16(b[28:], uint16(at.mode))
	le.PutUint64(b[32:], at.ino)
	le.PutUint64(b[40:], uint64(at.size))
	le.PutUint64(b[48:], uint64((at.size+511)/512))
	ts := t.k.timespecs(at)
	for i, off := range []int{64, 80, 96, 112} { // atime, btime, ctime, mtime
		v := ts[[]int{0, 2, 2, 1}[i]]
		le.PutUint64(b[off:], v[0])
		le.PutUint32(b[off+8:], uint32(v[1]))
	}
	le.PutUint32(b[128:], uint32(at.rdev>>8))
	le.PutUint32(b[132:], uint32(at.rdev&0xff))
	le.PutUint32(b[136:], uint32(at.dev>>8))
	le.PutUint32(b[140:], uint32(at.dev&0xff))
	return 0, memErr(t.proc.as.Write(a[4], b[:]))
}

// tmpfsMagic is statfs's f_type for tmpfs, which the program's file
// system is like: in memory, bounded by the budget.
const tmpfsMagic = 0x01021994

func sysStatfs(t *thread, a args) (uint64, error) {
	if _, err := t.nodeAt(atFDCWD, a[0]); err != nil {
		return 0, err
	}
	return 0, memErr(t.proc.as.Write(a[1], t.k.statfs()))
}

func sysFstatfs(t *thread, a args) (uint64, error) {
	if _, err := t.proc.fds.Get(a[0]); err != nil {
		return 0, err
	}
	return 0, memErr(t.proc.as.Write(a[1], t.k.statfs()))
}

// statfs is struct statfs for the program's file system: a tmpfs of the
// budget's size and nodes, what is free what the program does not hold.
func (k *Kernel) statfs() []byte {
	var b [120]byte
	le := binary.LittleEndian
	blocks := uint64(maxFileBytes / pageSize)
	free := blocks - uint64(k.budget[fileBytes]+pageSize-1)/pageSize
	files := uint64(vfs.MaxNodes)
	for i, v := range []uint64{tmpfsMagic, pageSize, blocks, free, free, files, files - uint64(k.budget[vfs.Nodes])} {
		le.PutUint64(b[i*8:], v)
	}
	le.PutUint64(b[64:], vfs.MaxNameLen) // f_namelen, after the fsid
	le.PutUint64(b[72:], pageSize)       // f_frsize
	return b[:]
}
