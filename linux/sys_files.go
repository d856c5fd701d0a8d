package linux

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

func init() {
	register(unix.SYS_READ, "read", sysRead)
	register(unix.SYS_WRITE, "write", sysWrite)
	register(unix.SYS_WRITEV, "writev", sysWritev)
	register(unix.SYS_IOCTL, "ioctl", sysIoctl)
	register(unix.SYS_FSTAT, "fstat", sysFstat)
	register(unix.SYS_NEWFSTATAT, "newfstatat", sysNewfstatat)
	register(unix.SYS_CLOSE, "close", sysClose)
	register(unix.SYS_LSEEK, "lseek", sysLseek)
	register(unix.SYS_FCNTL, "fcntl", sysFcntl)
	register(unix.SYS_OPENAT, "openat", sysOpenat)
	register(unix.SYS_OPEN, "open", func(k *Kernel, a args) (uint64, error) { return sysOpenat(k, args{atFDCWD, a[0], a[1], a[2]}) })
	register(unix.SYS_ACCESS, "access", func(k *Kernel, a args) (uint64, error) { return sysFaccessat(k, args{atFDCWD, a[0], a[1]}) })
	register(unix.SYS_FACCESSAT, "faccessat", sysFaccessat)
	register(unix.SYS_READLINK, "readlink", func(k *Kernel, a args) (uint64, error) { return sysReadlinkat(k, args{atFDCWD, a[0], a[1], a[2]}) })
	register(unix.SYS_READLINKAT, "readlinkat", sysReadlinkat)
	register(unix.SYS_GETCWD, "getcwd", sysGetcwd)
}

const atFDCWD = ^uint64(99) // AT_FDCWD, -100

// The program's files are its three standard streams for now: stdin is
// empty, stdout and stderr go to the machine's console.
func console(fd uint64) bool { return fd <= 2 }

// maxIO bounds what one read or write moves; the program loops for more,
// as it must for Linux too.
const maxIO = 1 << 20

func sysRead(k *Kernel, a args) (uint64, error) {
	if !console(a[0]) {
		return 0, unix.EBADF
	}
	return 0, nil // stdin is empty; writing streams are read as end of file
}

func sysWrite(k *Kernel, a args) (uint64, error) {
	if !console(a[0]) {
		return 0, unix.EBADF
	}
	n := min(a[2], maxIO)
	b := make([]byte, n)
	if err := k.as.read(a[1], b); err != nil {
		return 0, memErr(err)
	}
	_, err := k.m.Console().Write(b)
	return n, err
}

// maxIOV is IOV_MAX.
const maxIOV = 1024

func sysWritev(k *Kernel, a args) (uint64, error) {
	if !console(a[0]) {
		return 0, unix.EBADF
	}
	if a[2] > maxIOV {
		return 0, unix.EINVAL
	}
	var total uint64
	for i := uint64(0); i < a[2] && total < maxIO; i++ {
		var iov [16]byte
		if err := k.as.read(a[1]+i*16, iov[:]); err != nil {
			return 0, memErr(err)
		}
		base, n := binary.LittleEndian.Uint64(iov[:]), binary.LittleEndian.Uint64(iov[8:])
		n = min(n, maxIO-total)
		w, err := sysWrite(k, args{a[0], base, n})
		if err != nil {
			return 0, err
		}
		total += w
	}
	return total, nil
}

// sysIoctl: the standard streams are not terminals.
func sysIoctl(k *Kernel, a args) (uint64, error) {
	if !console(a[0]) {
		return 0, unix.EBADF
	}
	return 0, unix.ENOTTY
}

// consoleStat is what fstat says of a standard stream: a character device
// that is not a terminal, owned by the program's user.
func consoleStat() []byte {
	var b [144]byte
	binary.LittleEndian.PutUint64(b[0:], 0x16)                // st_dev
	binary.LittleEndian.PutUint64(b[16:], 1)                  // st_nlink
	binary.LittleEndian.PutUint32(b[24:], unix.S_IFCHR|0o620) // st_mode
	binary.LittleEndian.PutUint32(b[28:], uid)                // st_uid
	binary.LittleEndian.PutUint32(b[32:], gid)                // st_gid
	binary.LittleEndian.PutUint64(b[40:], unix.Mkdev(136, 0)) // st_rdev
	binary.LittleEndian.PutUint64(b[56:], 1024)               // st_blksize
	return b[:]
}

func sysFstat(k *Kernel, a args) (uint64, error) {
	if !console(a[0]) {
		return 0, unix.EBADF
	}
	return 0, memErr(k.as.write(a[1], consoleStat()))
}

func sysNewfstatat(k *Kernel, a args) (uint64, error) {
	path, err := k.as.readString(a[1], unix.PathMax)
	if err != nil {
		return 0, memErr(err)
	}
	if path == "" && a[3]&unix.AT_EMPTY_PATH != 0 {
		return sysFstat(k, args{a[0], a[2]})
	}
	return 0, unix.ENOENT
}

func sysClose(k *Kernel, a args) (uint64, error) {
	if !console(a[0]) {
		return 0, unix.EBADF
	}
	return 0, nil
}

func sysLseek(k *Kernel, a args) (uint64, error) {
	if !console(a[0]) {
		return 0, unix.EBADF
	}
	return 0, unix.ESPIPE
}

func sysFcntl(k *Kernel, a args) (uint64, error) {
	if !console(a[0]) {
		return 0, unix.EBADF
	}
	switch a[1] {
	case unix.F_GETFL:
		return unix.O_RDWR, nil
	case unix.F_GETFD, unix.F_SETFD, unix.F_SETFL:
		return 0, nil
	}
	return 0, unix.EINVAL
}

// sysOpenat: there are no files yet but the standard streams.
func sysOpenat(k *Kernel, a args) (uint64, error) {
	if _, err := k.as.readString(a[1], unix.PathMax); err != nil {
		return 0, memErr(err)
	}
	return 0, unix.ENOENT
}

func sysFaccessat(k *Kernel, a args) (uint64, error) {
	if _, err := k.as.readString(a[1], unix.PathMax); err != nil {
		return 0, memErr(err)
	}
	return 0, unix.ENOENT
}

func sysReadlinkat(k *Kernel, a args) (uint64, error) {
	path, err := k.as.readString(a[1], unix.PathMax)
	if err != nil {
		return 0, memErr(err)
	}
	if path != "/proc/self/exe" {
		return 0, unix.ENOENT
	}
	target := []byte(k.prog.Path)
	n := min(uint64(len(target)), a[3])
	return n, memErr(k.as.write(a[2], target[:n]))
}

func sysGetcwd(k *Kernel, a args) (uint64, error) {
	if a[1] < 2 {
		return 0, unix.ERANGE
	}
	return 2, memErr(k.as.write(a[0], []byte("/\x00")))
}
