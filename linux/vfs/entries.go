package vfs

import "golang.org/x/sys/unix"

// Mkdir makes the directory e names, with Linux's EEXIST for an existing
// entry, the root, "." and "..".
func (fs *FileSystem) Mkdir(e Entry, mode uint32) error {
	if err := fs.vacant(e); err != nil {
		return err
	}
	if err := fs.mayCreate(e.Dir); err != nil {
		return err
	}
	n, err := fs.NewNode(true, mode)
	if err != nil {
		return err
	}
	n.Written = true
	fs.put(e.Dir, e.Name, n)
	fs.Modified(e.Dir)
	return nil
}

// Create makes the regular file e names, empty, with mode: the entry must
// not exist.
func (fs *FileSystem) Create(e Entry, mode uint32) (*Node, error) {
	if err := fs.vacant(e); err != nil {
		return nil, err
	}
	if err := fs.mayCreate(e.Dir); err != nil {
		return nil, err
	}
	n, err := fs.NewNode(false, mode)
	if err != nil {
		return nil, err
	}
	n.Written = true
	fs.link(e.Dir, e.Name, n)
	fs.Modified(e.Dir)
	return n, nil
}

// Symlink makes the symbolic link e names, to target.
func (fs *FileSystem) Symlink(e Entry, target string) error {
	n, err := fs.Create(e, 0o777)
	if err != nil {
		return err
	}
	n.Link = target
	return nil
}

// vacant is nil if e names no entry yet, EEXIST if it does (the root,
// "." and ".." always do), or the host's error asking.
func (fs *FileSystem) vacant(e Entry) error {
	switch ok, err := fs.Exists(e); {
	case err != nil:
		return err
	case ok:
		return unix.EEXIST
	}
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
	n, err := fs.Entry(e)
	switch {
	case err != nil:
		return err
	case n == nil:
		return unix.ENOENT
	}
	if err := fs.mayDelete(e.Dir, n); err != nil {
		return err
	}
	switch {
	case n.Dir && !rmdir:
		return unix.EISDIR
	case n.Dir && !fs.empty(n):
		return unix.ENOTEMPTY
	case !n.Dir && (rmdir || e.Slash):
		return unix.ENOTDIR
	}
	e.Dir.unput(e.Name)
	fs.dropLink(n)
	fs.Modified(e.Dir)
	return nil
}

// Link makes the entry e name the file n too (a hard link): EPERM for a
// directory, EEXIST where e exists.
func (fs *FileSystem) Link(n *Node, e Entry) error {
	if n.Dir {
		return unix.EPERM
	}
	if err := fs.vacant(e); err != nil {
		return err
	}
	if err := fs.mayCreate(e.Dir); err != nil {
		return err
	}
	if n.removed {
		return unix.ENOENT // linkat of an unlinked file (AT_EMPTY_PATH)
	}
	fs.link(e.Dir, e.Name, n)
	fs.Modified(e.Dir)
	fs.Changed(n)
	return nil
}

// dropLink is told that an entry naming n went: a directory, or a file's
// last link, leaves the tree.
func (fs *FileSystem) dropLink(n *Node) {
	if !n.Dir {
		if n.links--; n.links > 0 {
			fs.Changed(n)
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
	a, err := fs.Entry(from)
	if err != nil {
		return err
	}
	b, err := fs.Entry(to)
	switch {
	case err != nil:
		return err
	case a == nil || b == nil:
		return unix.ENOENT
	}
	if err := fs.mayMove(from.Dir, a, to.Dir); err != nil {
		return err
	}
	if err := fs.mayMove(to.Dir, b, from.Dir); err != nil {
		return err
	}
	if a.Dir && a.Holds(to.Dir) || b.Dir && b.Holds(from.Dir) {
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
	fs.Modified(from.Dir)
	fs.Modified(to.Dir)
	fs.Changed(a)
	fs.Changed(b)
	return nil
}

// Rename moves the entry from names to the entry to names, replacing a
// file or empty directory there, with Linux's errors in its order.
func (fs *FileSystem) Rename(from, to Entry) error {
	if !from.Named() || !to.Named() {
		return unix.EBUSY // the root, "." or ".."
	}
	oldName, newName := from.Name, to.Name
	n, err := fs.Entry(from)
	if err != nil {
		return err
	}
	replaced, err := fs.Entry(to)
	switch {
	case err != nil:
		return err
	case n == nil:
		return unix.ENOENT
	}
	if err := fs.mayMove(from.Dir, n, to.Dir); err != nil {
		return err
	}
	if replaced != nil && replaced != n {
		if err := fs.mayDelete(to.Dir, replaced); err != nil {
			return err
		}
	} else if err := fs.mayCreate(to.Dir); err != nil {
		return err
	}
	switch {
	case !n.Dir && (from.Slash || to.Slash):
		return unix.ENOTDIR
	case replaced != nil && replaced.Dir != n.Dir:
		return unix.EISDIR
	case n.Dir && replaced != nil && !fs.empty(replaced):
		return unix.ENOTEMPTY
	case n.Dir && n.Holds(to.Dir):
		return unix.EINVAL // a directory moved into itself would be a cycle
	case replaced == n:
		return nil // two links of one file: POSIX leaves both
	}
	from.Dir.unput(oldName)
	if replaced != nil {
		fs.dropLink(replaced)
	}
	fs.put(to.Dir, newName, n)
	n.Written = true
	fs.Modified(from.Dir)
	fs.Modified(to.Dir)
	fs.Changed(n)
	return nil
}

// empty reports whether directory d has no entries, a host directory's
// learned first (a failure to list it counts as entries: not removed).
func (fs *FileSystem) empty(d *Node) bool {
	names, err := fs.List(d)
	return err == nil && len(names) == 0
}

// Replace makes n the entry e names, over whatever was there (a file the
// kernel places: the executable, a file the user gave).
func (fs *FileSystem) Replace(e Entry, n *Node) error {
	if !e.Named() {
		return unix.EBUSY
	}
	old, err := fs.Entry(e)
	if err != nil {
		return err
	}
	if old != nil {
		e.Dir.unput(e.Name)
		fs.dropLink(old)
	}
	fs.link(e.Dir, e.Name, n)
	return nil
}
