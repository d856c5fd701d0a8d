package vfs

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// FileSystem is the tree the program's paths resolve in. Its nodes and
// their contents are charged to the program's budget.
type FileSystem struct {
	root    *Node
	nextIno uint64
	budget  *Budget
	remap   Remap
	host    Host      // where host directories' entries and files' contents come from
	owner   [2]uint32 // the user and group new files belong to
	groups  []uint32  // the user's supplementary groups
	// abstract is AF_UNIX's abstract namespace: the sockets bound in it;
	// ports are the internet sockets bound, by port.
	abstract map[string]*Socket
	ports    map[uint16][]*Socket
	door     doorSide // the published ports' connections
	wire     wireTap  // who sees the loopback's packets
	clock    func() int64
	magic    Magic
	// forgotAt is the nodes held when forgetting last fell short
	// (forget.go).
	forgotAt int64
}

// Magic finds the entry name of directory d that the tree does not hold
// (a walk met no such child): ok false if d is not one whose entries
// the kernel makes as they are asked for (/proc/self/fd's).
type Magic func(d *Node, name string) (n *Node, ok bool, err error)

// SetMagic makes m the finder of the entries the kernel makes.
func (fs *FileSystem) SetMagic(m Magic) { fs.magic = m }

// SetOwner makes the files the program makes from now on its user's and
// group's.
func (fs *FileSystem) SetOwner(uid, gid uint32) { fs.owner = [2]uint32{uid, gid} }

// SetGroups gives the program's user its supplementary groups, whose
// files it may access as their group. The tree keeps the slice, not a
// copy (the kernel sets it at every call): the caller never changes it.
func (fs *FileSystem) SetGroups(groups []uint32) { fs.groups = groups }

// SetClock gives the tree the time a change happens at, in ns since the
// Unix epoch, to stamp files with; before it, files have zero times.
func (fs *FileSystem) SetClock(now func() int64) { fs.clock = now }

func (fs *FileSystem) now() int64 {
	if fs.clock == nil {
		return 0
	}
	return fs.clock()
}

// Modified stamps n as Linux does a file whose contents or entries
// changed: its modification and change times are now.
func (fs *FileSystem) Modified(n *Node) {
	now := fs.now()
	n.Times.Mtime, n.Times.Ctime = now, now
	n.edited()
}

// Changed stamps n as Linux does a file whose attributes (mode, owner,
// links) changed: its change time is now.
func (fs *FileSystem) Changed(n *Node) {
	n.Times.Ctime = fs.now()
	n.edited()
}

// edited notes that the program changed n, a host file or directory, so
// that the tree never forgets it (forget.go).
func (n *Node) edited() {
	if n.host != nil {
		n.host.edited = true
	}
}

// Remap is told that a mapped node's contents moved from old to new
// (they grew, shrank or were freed), so the mappings holding old hold new.
type Remap func(old, new []byte)

// Bounds on the directories leading to a host file.
const (
	maxPathDepth = 64
	// MaxNameLen is NAME_MAX: the longest name of a directory entry.
	MaxNameLen = 255
)

// New makes a file system with an empty root, charged to b; remap is
// told when mapped contents move.
func New(b *Budget, remap Remap) *FileSystem {
	fs := &FileSystem{budget: b, remap: remap}
	fs.root, _ = fs.NewNode(true, 0o755) // the first node always fits
	return fs
}

// Root is the root directory.
func (fs *FileSystem) Root() *Node { return fs.root }

// NewNode makes a file or directory, charged until it is freed, in no
// directory yet.
func (fs *FileSystem) NewNode(dir bool, mode uint32) (*Node, error) {
	if err := fs.budget.Charge(Nodes, 1); err != nil {
		return nil, err
	}
	fs.nextIno++
	now := fs.now()
	n := &Node{Ino: fs.nextIno, Dir: dir, Mode: mode, UID: fs.owner[0], GID: fs.owner[1], Times: Times{now, now, now}}
	if dir {
		n.children, n.order = map[string]*Node{}, map[string]uint64{}
	}
	return n, nil
}

// Clean makes p absolute and resolves . and .. lexically, for paths the
// user names (a mount's), never the program's: those are walked
// (Resolve).
func Clean(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return path.Clean(p)
}

// maxSymlinks is how many symbolic links one walk follows before it
// fails with ELOOP (Linux's MAXSYMLINKS).
const maxSymlinks = 40

// Lookup finds the node at p, following a symbolic link at its end
// (Resolve).
func (fs *FileSystem) Lookup(p string) (*Node, error) { return fs.Resolve(p, true) }

// Resolve finds the node at p as Linux's path walk does, component by
// component rather than by cleaning p first: every component a name, "."
// or ".." follows must be a directory ("/etc/passwd/.." is ENOTDIR, not
// /etc), ".." is the directory's parent (the root's is itself), a
// symbolic link on the way is followed (its target from its directory,
// or from the root if absolute; more than maxSymlinks is ELOOP), and a
// trailing slash asks for a directory, following a link to one. A link at
// the end is followed if follow says so. A relative p starts at the root.
func (fs *FileSystem) Resolve(p string, follow bool) (*Node, error) {
	if p == "" {
		return nil, unix.ENOENT
	}
	at, links := fs.root, 0
	parts := strings.Split(p, "/")
	for i := 0; i < len(parts); i++ {
		if !at.Dir {
			return nil, unix.ENOTDIR
		}
		part := parts[i]
		switch part {
		case "", ".":
			continue
		case "..":
			if at.parent != nil {
				at = at.parent
			}
			continue
		}
		if len(part) > MaxNameLen {
			return nil, unix.ENAMETOOLONG
		}
		next, err := fs.child(at, part)
		if err != nil {
			return nil, err
		}
		if next.Link != "" && (i < len(parts)-1 || follow) {
			if links++; links > maxSymlinks {
				return nil, unix.ELOOP
			}
			if strings.HasPrefix(next.Link, "/") {
				at = fs.root
			}
			parts = append(strings.Split(next.Link, "/"), parts[i+1:]...)
			i = -1
			continue
		}
		at = next
	}
	return at, nil
}

// Entry is the last component of a path a call creates, removes or
// renames: the directory it is (or would be) in, its name, and whether the
// path ended in a slash, which asks for a directory.
type Entry struct {
	Dir   *Node
	Name  string // "" for the root itself, or "." or "..": no entry to make or remove
	Slash bool
}

// Exists reports whether e's directory has the entry e names (the root,
// "." and ".." always exist), asking the host if it must.
func (fs *FileSystem) Exists(e Entry) (bool, error) {
	if !e.Named() {
		return true, nil
	}
	n, err := fs.Entry(e)
	return n != nil, err
}

// Entry is the node e names, or nil: ENOENT is not an error here.
func (fs *FileSystem) Entry(e Entry) (*Node, error) {
	c, err := fs.child(e.Dir, e.Name)
	if err == unix.ENOENT {
		return nil, nil
	}
	return c, err
}

// Named reports whether e names an entry of its directory, not the root,
// "." or "..", which Linux's calls that create or remove refuse.
func (e Entry) Named() bool { return e.Name != "" && e.Name != "." && e.Name != ".." }

// Parent finds the directory p's last component is in, walking the rest
// of p as Lookup does.
func (fs *FileSystem) Parent(p string) (Entry, error) {
	if p == "" {
		return Entry{}, unix.ENOENT
	}
	trimmed := strings.TrimRight(p, "/")
	e := Entry{Slash: len(trimmed) < len(p)}
	dir := "/"
	if i := strings.LastIndex(trimmed, "/"); i >= 0 {
		dir, e.Name = trimmed[:i+1], trimmed[i+1:]
	} else {
		e.Name = trimmed
	}
	if len(e.Name) > MaxNameLen {
		return Entry{}, unix.ENAMETOOLONG
	}
	d, err := fs.Lookup(dir)
	if err != nil {
		return Entry{}, err
	}
	if !d.Dir {
		return Entry{}, unix.ENOTDIR
	}
	e.Dir = d
	return e, nil
}

// Final is the entry p names for a call that creates it, with a symbolic
// link at its end followed to the entry its target names, as open's
// O_CREAT does through a link to nothing.
func (fs *FileSystem) Final(p string) (Entry, error) {
	for links := 0; ; links++ {
		e, err := fs.Parent(p)
		if err != nil || !e.Named() {
			return e, err
		}
		n, err := fs.Entry(e)
		if err != nil || n == nil || !n.IsSymlink() {
			return e, err
		}
		if links >= maxSymlinks {
			return Entry{}, unix.ELOOP
		}
		p = n.Link
		if !strings.HasPrefix(p, "/") {
			dir, ok := fs.DirPath(e.Dir)
			if !ok {
				return Entry{}, unix.ENOENT
			}
			p = dir + "/" + p
		}
	}
}

// MkdirAll makes the directories of p, as the ones leading to a host file.
func (fs *FileSystem) MkdirAll(p string) (*Node, error) {
	n := fs.root
	parts := strings.Split(strings.TrimPrefix(Clean(p), "/"), "/")
	if len(parts) > maxPathDepth {
		return nil, fmt.Errorf("path %s is deeper than %d", p, maxPathDepth)
	}
	for _, part := range parts {
		if part == "" {
			continue
		}
		next, err := fs.child(n, part)
		switch {
		case err == unix.ENOENT:
			if next, err = fs.NewNode(true, 0o755); err != nil {
				return nil, fmt.Errorf("%s: more than %d files and directories", p, MaxNodes)
			}
			fs.put(n, part, next)
		case err != nil:
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if !next.Dir {
			return nil, fmt.Errorf("%s: %s is a file", p, part)
		}
		n = next
	}
	return n, nil
}

// Add places a file with data at p, replacing nothing.
func (fs *FileSystem) Add(p string, data []byte, mode uint32) (*Node, error) {
	dir, name := path.Split(Clean(p))
	d, err := fs.MkdirAll(dir)
	if err != nil {
		return nil, err
	}
	if old, err := fs.child(d, name); old != nil || err != unix.ENOENT {
		return nil, fmt.Errorf("%s exists already (%v)", p, err)
	}
	if err := fs.budget.Charge(FileBytes, int64(len(data))); err != nil {
		return nil, fmt.Errorf("the program's files take more than %d bytes", MaxFileBytes)
	}
	n, err := fs.NewNode(false, mode)
	if err != nil {
		fs.budget.Release(FileBytes, int64(len(data)))
		return nil, fmt.Errorf("more than %d files and directories", MaxNodes)
	}
	n.data = data
	fs.link(d, name, n)
	return n, nil
}

// AddDir places an empty directory of the kernel's at p, in a directory
// that exists; false if p exists or the nodes run out.
func (fs *FileSystem) AddDir(p string, mode uint32) bool {
	e, err := fs.Final(p)
	if err != nil || !e.Named() {
		return false
	}
	if old, err := fs.child(e.Dir, e.Name); old != nil || err != unix.ENOENT {
		return false
	}
	d, err := fs.NewNode(true, mode)
	if err != nil {
		return false
	}
	fs.put(e.Dir, e.Name, d)
	return true
}

// Drop removes the kernel's entry at p (with what it holds), where the
// program's calls would be refused: /proc's of a process reaped.
func (fs *FileSystem) Drop(p string) {
	e, err := fs.Final(p)
	if err != nil || !e.Named() {
		return
	}
	if n, err := fs.child(e.Dir, e.Name); err == nil && n != nil {
		e.Dir.unput(e.Name)
		fs.dropLink(n)
	}
}

// DirPath is the path of directory n, "" for the root; false if n is no
// longer in the tree (removed, as getcwd finds a working directory that
// was).
func (fs *FileSystem) DirPath(n *Node) (string, bool) {
	var names []string
	for ; n != fs.root; n = n.parent {
		if n.removed || n.parent == nil || len(names) > MaxNodes { // more: a forged state's loop
			return "", false
		}
		name, ok := n.parent.nameOf(n)
		if !ok {
			return "", false
		}
		names = append(names, name)
	}
	slices.Reverse(names)
	if len(names) == 0 {
		return "", true
	}
	return "/" + strings.Join(names, "/"), true
}

// NewIno is a new inode number, for a file outside the tree (a pipe).
func (fs *FileSystem) NewIno() uint64 {
	fs.nextIno++
	return fs.nextIno
}

// NextIno is the inode the next node gets.
func (fs *FileSystem) NextIno() uint64 { return fs.nextIno }
