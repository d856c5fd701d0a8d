package vfs

import "golang.org/x/sys/unix"

// Mkdir makes the directory e names, with Linux's EEXIST for an existing
// entry, the root, "." and "..".
func (fs *FileSystem) Mkdir(e Entry, mode uint32) error {
	if _, ok := e.Dir.children[e.Name]; ok || !e.Named() {
		return unix.EEXIST
	}
	n, err := fs.NewNode(true, mode)
	if err != nil {
		return err
	}
	e.Dir.children[e.Name] = n
	n.parent = e.Dir
	return nil
}

// Remove removes the file, or (rmdir) the empty directory, e names, with
// Linux's errors for the root, "." and "..", and for a trailing slash
// after a file.
func (fs *FileSystem) Remove(e Entry, rmdir bool) error {
	switch {
	case !rmdir && !e.Named():
		return unix.EISDIR
	case rmdir && e.Name == ".":
		return unix.EINVAL
	case rmdir && e.Name == "..":
		return unix.ENOTEMPTY
	case rmdir && e.Name == "":
		return unix.EBUSY
	}
	n, ok := e.Dir.children[e.Name]
	switch {
	case !ok:
		return unix.ENOENT
	case n.Dir && !rmdir:
		return unix.EISDIR
	case n.Dir && len(n.children) > 0:
		return unix.ENOTEMPTY
	case !n.Dir && (rmdir || e.Slash):
		return unix.ENOTDIR
	}
	delete(e.Dir.children, e.Name)
	fs.dropLink(n)
	return nil
}

// Link makes the entry e name the file n too (a hard link): EPERM for a
// directory, EEXIST where e exists.
func (fs *FileSystem) Link(n *Node, e Entry) error {
	switch {
	case n.Dir:
		return unix.EPERM
	case e.Exists():
		return unix.EEXIST
	case n.removed:
		return unix.ENOENT // linkat of an unlinked file (AT_EMPTY_PATH)
	}
	e.Dir.children[e.Name] = n
	n.links++
	return nil
}

// dropLink is told that an entry naming n went: a directory, or a file's
// last link, leaves the tree.
func (fs *FileSystem) dropLink(n *Node) {
	if !n.Dir {
		if n.links--; n.links > 0 {
			return
		}
	}
	fs.unlinked(n)
}

// Exchange swaps the entries from and to name (renameat2's
// RENAME_EXCHANGE): both must exist, and neither may be a directory the
// other would then be inside.
func (fs *FileSystem) Exchange(from, to Entry) error {
	if !from.Named() || !to.Named() {
		return unix.EBUSY
	}
	a, okA := from.Dir.children[from.Name]
	b, okB := to.Dir.children[to.Name]
	switch {
	case !okA || !okB:
		return unix.ENOENT
	case a.Dir && a.Holds(to.Dir), b.Dir && b.Holds(from.Dir):
		return unix.EINVAL
	}
	from.Dir.children[from.Name], to.Dir.children[to.Name] = b, a
	if a.Dir {
		a.parent = to.Dir
	}
	if b.Dir {
		b.parent = from.Dir
	}
	a.Written, b.Written = true, true
	return nil
}

// Rename moves the entry from names to the entry to names, replacing a
// file or empty directory there, with Linux's errors in its order.
func (fs *FileSystem) Rename(from, to Entry) error {
	if !from.Named() || !to.Named() {
		return unix.EBUSY // the root, "." or ".."
	}
	oldName, newName := from.Name, to.Name
	n, ok := from.Dir.children[oldName]
	replaced := to.Dir.children[newName]
	switch {
	case !ok:
		return unix.ENOENT
	case !n.Dir && (from.Slash || to.Slash):
		return unix.ENOTDIR
	case replaced != nil && replaced.Dir != n.Dir:
		return unix.EISDIR
	case n.Dir && replaced != nil && len(replaced.children) > 0:
		return unix.ENOTEMPTY
	case n.Dir && n.Holds(to.Dir):
		return unix.EINVAL // a directory moved into itself would be a cycle
	case replaced == n:
		return nil // two links of one file: POSIX leaves both
	}
	delete(from.Dir.children, oldName)
	if replaced != nil {
		fs.dropLink(replaced)
	}
	to.Dir.children[newName] = n
	if n.Dir {
		n.parent = to.Dir
	}
	n.Written = true
	return nil
}
