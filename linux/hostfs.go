package linux

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/linux/vfs"
)

// Where the program's writes meet the host: --keep-writes writes below
// its directory only, resolving paths with openat2, so that a symbolic
// link there cannot take a write to a host file outside it.

// KeepWrites copies the files the program created or changed, and the
// symbolic links it made, into dir, at their guest paths below it: what
// --keep-writes keeps of a run.
//
// Nothing is written outside dir. Below it no symbolic link is followed
// (openat2's RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS): a directory on the way
// that is a link is refused, naming it, and the files below it are not
// kept; the others are. A file is written under a new name and renamed
// over the old one, so that a link, or a hard link, at its place is
// replaced rather than written through.
func (k *Kernel) KeepWrites(dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	top, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(top)
	n := 0
	var refused []error
	holds := map[*node]bool{}
	writesBelow(k.fs.Root(), holds)
	var walk func(at *node, fd int, p string)
	walk = func(at *node, fd int, p string) {
		for _, name := range at.Names() {
			c, _ := at.Child(name)
			full := filepath.Join(dir, p, name)
			switch {
			case c.Dir && holds[c]:
				sub, err := keptDir(fd, name, full)
				if err != nil {
					refused = append(refused, err)
					continue
				}
				walk(c, sub, path.Join(p, name))
				unix.Close(sub)
			case kept(c):
				keep := keepFile
				if c.IsSymlink() {
					keep = keepLink
				}
				if err := keep(fd, name, c, full); err != nil {
					refused = append(refused, err)
					continue
				}
				n++
			}
		}
	}
	walk(k.fs.Root(), top, "")
	return n, errors.Join(refused...)
}

// writesBelow marks in holds each directory from d down that has, at any
// depth, a file the program created or changed (only their directories
// are made), and reports whether d does.
func writesBelow(d *node, holds map[*node]bool) bool {
	found := false
	for _, name := range d.Names() {
		c, _ := d.Child(name)
		if c.Dir && writesBelow(c, holds) || kept(c) {
			found = true
		}
	}
	if found {
		holds[d] = true
	}
	return found
}

// kept reports whether n is kept: a file the program wrote, or a link it
// made.
func kept(n *node) bool { return n.Written && (n.IsRegular() || n.IsSymlink()) }

// beneath resolves a name below its directory, following no link.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS

// keptDir makes (if need be) and opens the directory name in the
// directory fd; full names it for errors.
func keptDir(fd int, name, full string) (int, error) {
	if err := unix.Mkdirat(fd, name, 0o755); err != nil && err != unix.EEXIST {
		return 0, &os.PathError{Op: "mkdir", Path: full, Err: err}
	}
	sub, err := unix.Openat2(fd, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath})
	switch {
	case err == unix.ELOOP:
		return 0, fmt.Errorf("%s is a symbolic link: kept writes follow none", full)
	case err != nil:
		return 0, &os.PathError{Op: "open", Path: full, Err: err}
	}
	return sub, nil
}

// keepFile writes n's contents to name in the directory fd: to a new file
// beside it first, then renamed over it.
func keepFile(fd int, name string, n *node, full string) error {
	tmp, f, err := createBeside(fd, name, n.Mode&0o777)
	if err != nil {
		return &os.PathError{Op: "create", Path: full, Err: err}
	}
	_, err = f.Write(n.Contents())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(fd, tmp, fd, name)
	}
	if err != nil {
		unix.Unlinkat(fd, tmp, 0)
		return &os.PathError{Op: "write", Path: full, Err: err}
	}
	return nil
}

// keepLink makes the symbolic link n as name in the directory fd: beside
// it first, then renamed over it. The target is only text: nothing
// follows it.
func keepLink(fd int, name string, n *node, full string) error {
	tmp, err := beside(name, func(tmp string) error { return unix.Symlinkat(n.Link, fd, tmp) })
	if err != nil {
		return &os.PathError{Op: "symlink", Path: full, Err: err}
	}
	if err := unix.Renameat(fd, tmp, fd, name); err != nil {
		unix.Unlinkat(fd, tmp, 0)
		return &os.PathError{Op: "rename", Path: full, Err: err}
	}
	return nil
}

// createBeside creates a new file in the directory fd, named after name
// and free, and returns its name.
func createBeside(fd int, name string, mode uint32) (string, *os.File, error) {
	var f int
	tmp, err := beside(name, func(tmp string) (err error) {
		f, err = unix.Openat2(fd, tmp, &unix.OpenHow{
			Flags:   unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC,
			Mode:    uint64(mode),
			Resolve: beneath,
		})
		return err
	})
	if err != nil {
		return "", nil, err
	}
	return tmp, os.NewFile(uintptr(f), tmp), nil
}

// beside makes something (create) under a free name after name, in its
// directory, and returns the name: the next of a hundred while create
// finds the name taken (EEXIST).
func beside(name string, create func(tmp string) error) (string, error) {
	for i := 0; ; i++ {
		tmp := "." + strings.TrimPrefix(name, ".") + ".reprise-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(i)
		if len(tmp) > vfs.MaxNameLen {
			tmp = ".reprise-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(i)
		}
		switch err := create(tmp); {
		case err == nil:
			return tmp, nil
		case !errors.Is(err, unix.EEXIST) || i >= 100:
			return "", err
		}
	}
}
