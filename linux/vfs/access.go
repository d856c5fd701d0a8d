package vfs

import (
	"slices"

	"golang.org/x/sys/unix"
)

// What an access asks of a file, as Linux's MAY_EXEC, MAY_WRITE and
// MAY_READ (and access(2)'s X_OK, W_OK, R_OK).
const (
	MayExec  uint32 = 1
	MayWrite uint32 = 2
	MayRead  uint32 = 4
)

// Access is nil if the program's user (the owner of the files it makes,
// SetOwner) may access n as may asks, else EACCES, as Linux's
// generic_permission decides: root may read and write anything and
// execute what anyone may (a directory: always); another user is judged
// by the owner's bits if the file is its own, else the group's if its
// group is the user's or one of its supplementary groups (SetGroups),
// else the others'.
func (fs *FileSystem) Access(n *Node, may uint32) error {
	uid, gid := fs.owner[0], fs.owner[1]
	if uid == 0 {
		if may&MayExec != 0 && !n.Dir && n.Mode&0o111 == 0 {
			return unix.EACCES
		}
		return nil
	}
	bits := n.Mode
	switch {
	case n.UID == uid:
		bits >>= 6
	case n.GID == gid || slices.Contains(fs.groups, n.GID):
		bits >>= 3
	}
	if may&^(bits&7) != 0 {
		return unix.EACCES
	}
	return nil
}

// Owns reports whether the program's user may change n's attributes
// (mode, times): it owns n, or is root (EPERM otherwise, as Linux's
// inode_owner_or_capable).
func (fs *FileSystem) Owns(n *Node) bool { return fs.owner[0] == 0 || n.UID == fs.owner[0] }

// mayCreate is Linux's may_create: an entry may be made in d if the user
// may write and search it.
func (fs *FileSystem) mayCreate(d *Node) error { return fs.Access(d, MayWrite|MayExec) }

// mayMove is what Linux's rename checks of n, leaving from for to: it may
// be deleted from from, and a directory moved to another parent must be
// writable itself (its ".." changes).
func (fs *FileSystem) mayMove(from, n, to *Node) error {
	if err := fs.mayDelete(from, n); err != nil {
		return err
	}
	if n.Dir && from != to {
		return fs.Access(n, MayWrite)
	}
	return nil
}

// mayDelete is what Linux's may_delete checks before the kinds of the
// entries: that the user may write and search d, and in a sticky
// directory (/tmp) that it owns n or d (EPERM otherwise).
func (fs *FileSystem) mayDelete(d, n *Node) error {
	if err := fs.mayCreate(d); err != nil {
		return err
	}
	if d.Mode&unix.S_ISVTX != 0 && !fs.Owns(n) && !fs.Owns(d) {
		return unix.EPERM
	}
	return nil
}
