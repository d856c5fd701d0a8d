package linux

import (
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/host/userfile"
	"github.com/reprise-vm/reprise/linux/vfs"
	"github.com/reprise-vm/reprise/tape"
)

// The program sees the host's files as rr's tracees do, read-only: the
// tree (vfs) asks the host about a name, a directory or a file's contents
// the first time the program's execution needs it, and every answer is an
// input. A recording logs it as a file event (tape.FileFact) at the
// position the program asked; a replay takes the logged answer and never
// asks the host about names or directories, so a replay on a host where a
// directory gained a file still replays. Contents are logged by size and
// SHA-256: a replay reads them from the tape if they were packed, else
// from the host again, refusing a file that changed, by name.

// Observer makes the host's answers inputs: a recording logs each, a
// replay gives back the one logged at that point instead of calling ask.
// Without one (a live run) the host is asked.
type Observer interface {
	ObserveFile(f *tape.FileFact, ask func(*tape.FileFact) error) error
}

// SetObserver makes o see every question the program's files ask of the
// host.
func (k *Kernel) SetObserver(o Observer) { k.observer = o }

// hostView is the kernel's vfs.Host.
type hostView struct{ k *Kernel }

func (h hostView) observe(f *tape.FileFact, ask func(*tape.FileFact) error) error {
	if h.k.observer == nil {
		return ask(f)
	}
	return h.k.observer.ObserveFile(f, ask)
}

func (h hostView) Stat(p string) (vfs.Attrs, error) {
	f := tape.FileFact{Op: tape.FileStat, Path: p}
	if err := h.observe(&f, statHost); err != nil {
		return vfs.Attrs{}, err
	}
	if f.Errno != 0 {
		return vfs.Attrs{}, unix.Errno(f.Errno)
	}
	return attrsFrom(f.Stat), nil
}

func (h hostView) List(p string) ([]vfs.HostEntry, error) {
	f := tape.FileFact{Op: tape.FileList, Path: p}
	if err := h.observe(&f, listHost); err != nil {
		return nil, err
	}
	if f.Errno != 0 {
		return nil, unix.Errno(f.Errno)
	}
	listed := f.Listed()
	out := make([]vfs.HostEntry, len(listed))
	for i, e := range listed {
		out[i] = vfs.HostEntry{Name: e.Name, Attrs: attrsFrom(e.Stat)}
	}
	return out, nil
}

// Read is the contents of the host file p and their SHA-256: asked of the
// host and logged, or taken from the tape. A live run (no observer) keeps
// no tape and leaves the hash to the tree, which takes it only if a
// checkpoint or a change of the contents needs it (hashing libc's 2 MB
// took 1.3 ms of a 27 ms start-up).
func (h hostView) Read(p string) ([]byte, *[32]byte, error) {
	f := tape.FileFact{Op: tape.FileRead, Path: p}
	var data []byte
	asked := false
	err := h.observe(&f, func(f *tape.FileFact) error {
		asked = true
		data = readHost(f)
		if data != nil && h.k.observer != nil {
			f.SHA256 = sha256.Sum256(data) // the fact the tape logs
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, nil, err
	case f.Errno != 0:
		return nil, nil, unix.Errno(f.Errno)
	case !asked: // replayed: the contents logged by their hash
		if data, err = h.Reload(p, f.Size, f.SHA256); err != nil {
			return nil, nil, err
		}
	}
	if h.k.observer == nil {
		return data, nil, nil
	}
	return data, &f.SHA256, nil
}

// Reload finds contents recorded by size and hash: the executable's own,
// the tape's packed copy, or the host file again, checked.
func (h hostView) Reload(p string, size int64, sum [32]byte) ([]byte, error) {
	prog := &h.k.prog
	if int64(len(prog.Image)) == size && h.k.imageHash() == sum {
		return prog.Image, nil
	}
	if data, ok := tape.Packed(prog.Files, p, size, sum); ok {
		return data, nil
	}
	data, err := readRecorded(&File{Host: p, Size: size, SHA256: sum})
	if err != nil {
		// The run's failure, never an errno the program would see: it
		// read the file when recorded.
		return nil, errors.New("linux: " + err.Error())
	}
	return data, nil
}

// maxHostEntries bounds a directory listing the program is given: past
// it, getdents fails with ENOMEM rather than log more.
const maxHostEntries = tape.MaxDirEntries

// openHost opens the host file p with flags, following no symbolic link
// on the way or at its end (the tree follows links itself, in the
// guest's terms): a directory that became a link since the tree saw it is
// ELOOP, never a way out of the root.
func openHost(p string, flags uint64) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   flags | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// errnoOf is the errno a host call failed with (inside an os error too),
// as a fact keeps it; EIO for a failure that carries none.
func errnoOf(err error) uint16 {
	var e unix.Errno
	if errors.As(err, &e) && e > 0 && e < 4096 {
		return uint16(e)
	}
	return uint16(unix.EIO)
}

// statHost answers an lstat of f.Path.
func statHost(f *tape.FileFact) error {
	fd, err := openHost(f.Path, unix.O_PATH)
	if err != nil {
		f.Errno = errnoOf(err)
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Errno = errnoOf(err)
		return nil
	}
	s, err := statOf(&st, func() (string, error) { return readlinkFD(fd, "") })
	if err != nil {
		f.Errno = errnoOf(err)
		return nil
	}
	f.Stat = s
	return nil
}

// listHost answers a listing of the directory f.Path: its entries, each
// with its lstat.
func listHost(f *tape.FileFact) error {
	fd, err := openHost(f.Path, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		f.Errno = errnoOf(err)
		return nil
	}
	dir := os.NewFile(uintptr(fd), f.Path)
	defer dir.Close()
	names, err := dir.Readdirnames(maxHostEntries + 1)
	if err != nil && err != io.EOF {
		f.Errno = errnoOf(err)
		return nil
	}
	if len(names) > maxHostEntries {
		f.Errno = uint16(unix.ENOMEM)
		return nil
	}
	var entries []tape.DirEntry
	bytes := 0
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // gone since it was listed
		}
		s, err := statOf(&st, func() (string, error) { return readlinkFD(fd, name) })
		if err != nil {
			continue
		}
		// A listing too large to log as one fact is refused, as a
		// directory the program may not read.
		if bytes += len(name) + len(s.Link) + 64; bytes > tape.MaxFactBytes-unix.PathMax-64 {
			f.Errno = uint16(unix.ENOMEM)
			return nil
		}
		entries = append(entries, tape.DirEntry{Name: name, Stat: s})
	}
	// Logged in name order, with the host's order beside it: the order
	// getdents gives, which find and tar -c print in.
	f.Order = make([]uint32, len(entries))
	for i := range f.Order {
		f.Order[i] = uint32(i)
	}
	slices.SortFunc(f.Order, func(a, b uint32) int { return strings.Compare(entries[a].Name, entries[b].Name) })
	f.Entries = make([]tape.DirEntry, len(entries))
	for j, i := range f.Order {
		f.Entries[j] = entries[i]
	}
	for j, i := range slices.Clone(f.Order) {
		f.Order[i] = uint32(j) // from "sorted j is listed i" to "listed i is sorted j"
	}
	if slices.IsSorted(f.Order) {
		f.Order = nil // listed in name order: no order to log
	}
	return nil
}

// readHost answers a read of the regular file f.Path: its size (Read
// hashes the contents where the hash is kept), and returns its bytes.
// Files on pseudo file systems, whose contents are the host's state
// rather than a file's, are refused (EACCES), and so is a file past what
// the program's files may hold (EFBIG).
func readHost(f *tape.FileFact) []byte {
	fd, err := openHost(f.Path, unix.O_RDONLY)
	if err != nil {
		f.Errno = errnoOf(err)
		return nil
	}
	file := os.NewFile(uintptr(fd), f.Path)
	defer file.Close()
	var st unix.Stat_t
	var sfs unix.Statfs_t
	switch {
	case unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG:
		f.Errno = uint16(unix.EACCES)
		return nil
	case unix.Fstatfs(fd, &sfs) != nil || pseudoFileSystems[int64(sfs.Type)] != "":
		f.Errno = uint16(unix.EACCES)
		return nil
	case st.Size > vfs.MaxFileBytes:
		f.Errno = uint16(unix.EFBIG)
		return nil
	}
	data, err := userfile.ReadSized(file, st.Size, vfs.MaxFileBytes)
	switch {
	case err != nil:
		f.Errno = errnoOf(err)
		return nil
	case len(data) > vfs.MaxFileBytes:
		f.Errno = uint16(unix.EFBIG)
		return nil
	}
	f.Size = int64(len(data))
	return data
}

// readlinkFD reads the link name in the directory fd ("" for fd itself,
// an O_PATH descriptor of the link).
func readlinkFD(fd int, name string) (string, error) {
	b := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, name, b)
	if err != nil {
		return "", err
	}
	if n >= len(b) || n == 0 {
		return "", unix.ENAMETOOLONG
	}
	return string(b[:n]), nil
}

// statOf is what the program sees of a host file with attributes st.
func statOf(st *unix.Stat_t, link func() (string, error)) (tape.Stat, error) {
	s := tape.Stat{Mode: st.Mode, UID: st.Uid, GID: st.Gid, Nlink: uint32(min(st.Nlink, 1<<32-1)), Size: st.Size,
		Atime: st.Atim.Nano(), Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		target, err := link()
		if err != nil {
			return s, err
		}
		s.Link = target
	case unix.S_IFREG:
	default:
		s.Size = 0
	}
	return s, nil
}

// attrsFrom is the tree's form of a fact's attributes.
func attrsFrom(s tape.Stat) vfs.Attrs {
	return vfs.Attrs{Mode: s.Mode, UID: s.UID, GID: s.GID, Nlink: s.Nlink, Size: s.Size,
		Times: vfs.Times{Atime: s.Atime, Mtime: s.Mtime, Ctime: s.Ctime}, Link: s.Link}
}

// HostPath is the absolute host path the user named (--root, --file),
// its links resolved: the tree walks below it in the guest's terms.
func HostPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}
