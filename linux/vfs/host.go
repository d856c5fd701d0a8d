package vfs

import (
	"crypto/sha256"
	"path"

	"golang.org/x/sys/unix"
)

// Host is where the tree learns what it has not yet seen of the host's
// files: the attributes of a name in a host directory, a directory's
// entries, a file's contents. Every answer is an input of the run, which
// the kernel's host view logs or replays; the tree asks each question
// once, at a point the program's own execution decides, so a replay asks
// the same ones in the same order. Paths are host paths every directory
// of which the tree has seen as one; errors are errnos.
type Host interface {
	// Stat is lstat: a symbolic link's target comes with it.
	Stat(path string) (Attrs, error)
	// List is a directory's entries, each with its lstat, by name.
	List(path string) ([]HostEntry, error)
	// Read is a regular file's contents and their SHA-256, or nil for
	// it: the tree takes it from the contents when it needs it (sumOf).
	Read(path string) ([]byte, *[32]byte, error)
	// Reload reads them again for a restored tree, which must find the
	// contents it held: size bytes of that hash.
	Reload(path string, size int64, sum [32]byte) ([]byte, error)
}

// Attrs are a host file's attributes as the program sees them.
type Attrs struct {
	Mode            uint32 // type and permission bits (st_mode)
	UID, GID, Nlink uint32
	Size            int64
	Times           Times
	Link            string // a symbolic link's target
}

// Times are a file's access, modification and change times, in ns since
// the Unix epoch; zero says the program's epoch.
type Times struct{ Atime, Mtime, Ctime int64 }

// HostEntry is an entry of a host directory.
type HostEntry struct {
	Name  string
	Attrs Attrs
}

// hostFile is where a node the tree learned from the host comes from, and
// what of it the tree has read.
type hostFile struct {
	path   string
	size   int64 // a file's size as the host gave it, until its contents are read
	loaded bool  // a file's contents were read (data), of hash sum
	// sum is their SHA-256; nil until asked for (sumOf) where the reader
	// took none (a live run keeps no tape).
	sum *[32]byte
	// A directory's entries: listed says every one is in children;
	// before, asked holds each name asked of the host, found or not, so
	// that no name is asked twice (one the program removed stays gone).
	listed bool
	asked  map[string]bool
	// edited says the program changed the file (its attributes,
	// contents or entries): it is its own now, and never forgotten.
	edited bool
	// nlink is a directory's link count as the host gave it: 2 and one
	// per subdirectory, which the tree knows only once it has listed it.
	nlink uint32
}

// SetHost makes the tree learn the host's files from h: call it before
// the first lookup in a host directory.
func (fs *FileSystem) SetHost(h Host) { fs.host = h }

// MountHost makes the root the host directory dir: its entries are
// learned as the program looks.
func (fs *FileSystem) MountHost(dir string) {
	fs.root.host = &hostFile{path: dir}
}

// Place makes n the entry name of directory d, shadowing a host file of
// that name, which the tree will then never ask about: the files the
// kernel provides (/dev, /proc), which the program sees whatever the host
// has there.
func (fs *FileSystem) Place(d *Node, name string, n *Node) error {
	if _, ok := d.children[name]; ok {
		return unix.EEXIST
	}
	if err := fs.ask(d, name); err != nil {
		return err
	}
	fs.put(d, name, n)
	return nil
}

// put makes c the entry name of d: a new name lists after d's others, a
// name replaced keeps its place.
func (fs *FileSystem) put(d *Node, name string, c *Node) {
	if _, ok := d.children[name]; !ok {
		d.order[name] = d.nextOrder
		d.nextOrder++
	}
	d.children[name] = c
	if c.Dir {
		c.parent = d
	}
}

// unput removes the entry name of d.
func (d *Node) unput(name string) {
	delete(d.children, name)
	delete(d.order, name)
}

// relist puts d's entries in the order the host listed its directory,
// names: those first, then the program's own, in their order.
func (d *Node) relist(names []string) {
	listed := make(map[string]bool, len(names))
	var at uint64
	for _, name := range names {
		if _, ok := d.children[name]; ok {
			d.order[name], listed[name] = at, true
			at++
		}
	}
	for _, name := range d.Names() { // the program's, after the host's: still in their order
		if !listed[name] {
			d.order[name] = at
			at++
		}
	}
	d.nextOrder = at
}

// link makes c the entry name of d: one more link of a file.
func (fs *FileSystem) link(d *Node, name string, c *Node) {
	if !c.Dir {
		c.links++
	}
	fs.put(d, name, c)
}

// ask notes that name in d is decided, so the host is not asked about it
// later; each name noted is charged as a node is (ENOMEM past the bound).
func (fs *FileSystem) ask(d *Node, name string) error {
	h := d.host
	if h == nil || h.listed || h.asked[name] {
		return nil
	}
	if err := fs.budget.Charge(Nodes, 1); err != nil {
		return unix.ENOMEM
	}
	if h.asked == nil {
		h.asked = map[string]bool{}
	}
	h.asked[name] = true
	return nil
}

// child is d's entry name: one already in the tree, or one the host has,
// asked once.
func (fs *FileSystem) child(d *Node, name string) (*Node, error) {
	if c, ok := d.children[name]; ok {
		return c, nil
	}
	if fs.magic != nil && d.host == nil {
		if c, ok, err := fs.magic(d, name); ok {
			return c, err
		}
	}
	h := d.host
	if h == nil || h.listed || h.asked[name] || fs.host == nil {
		return nil, unix.ENOENT
	}
	if err := fs.ask(d, name); err != nil {
		return nil, err
	}
	p := path.Join(h.path, name)
	a, err := fs.host.Stat(p)
	switch err {
	case nil:
	case unix.ENOENT, unix.ENOTDIR:
		return nil, unix.ENOENT
	default:
		// Not an answer about the name (EACCES, ELOOP of a changed
		// host): asked again next time.
		delete(h.asked, name)
		fs.budget.Release(Nodes, 1)
		return nil, err
	}
	c, err := fs.HostNode(p, a)
	if err != nil {
		return nil, err
	}
	fs.link(d, name, c)
	return c, nil
}

// HostNode makes the node of the host file at p with attributes a, in no
// directory yet.
func (fs *FileSystem) HostNode(p string, a Attrs) (*Node, error) {
	typ := a.Mode & unix.S_IFMT
	n, err := fs.NewNode(typ == unix.S_IFDIR, a.Mode&0o7777)
	if err != nil {
		return nil, unix.ENOMEM
	}
	n.UID, n.GID, n.Times = a.UID, a.GID, a.Times
	n.host = &hostFile{path: p}
	switch typ {
	case unix.S_IFDIR:
		n.host.nlink = a.Nlink
	case unix.S_IFLNK:
		n.Link = a.Link
	case unix.S_IFREG:
		n.host.size = a.Size
	default: // a FIFO, socket or device of the host's: seen, never opened
		n.other = typ
	}
	return n, nil
}

// List is directory d's entries in the order getdents returns them: a
// host directory's as the host listed them, all learned first, then the
// program's own in the order it made them (as tmpfs lists them).
func (fs *FileSystem) List(d *Node) ([]string, error) {
	if h := d.host; h != nil && !h.listed && fs.host != nil {
		entries, err := fs.host.List(h.path)
		switch err {
		case nil:
		case unix.ENOENT, unix.ENOTDIR:
			entries = nil // gone from the host: only what the program put there
		default:
			return nil, err
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name)
			if _, ok := d.children[e.Name]; ok || h.asked[e.Name] {
				continue
			}
			c, err := fs.HostNode(path.Join(h.path, e.Name), e.Attrs)
			if err != nil {
				return nil, err
			}
			fs.link(d, e.Name, c)
		}
		d.relist(names)
		fs.budget.Release(Nodes, int64(len(h.asked)))
		h.listed, h.asked = true, nil
	}
	return d.Names(), nil
}

// Load reads a host file's contents if the tree has not yet: when the
// program opens, maps or executes it. A file past what the program's
// files may hold is EFBIG.
func (fs *FileSystem) Load(n *Node) error {
	h := n.host
	if h == nil || h.loaded || !n.IsRegular() {
		return nil
	}
	data, sum, err := fs.host.Read(h.path)
	if err != nil {
		return err
	}
	if err := fs.budget.Charge(FileBytes, int64(len(data))); err != nil {
		return unix.EFBIG
	}
	// The contents may be held elsewhere too (a replay's packed file,
	// the executable's image, which every segment's kernel shares):
	// copied before they change.
	n.data, n.shared = data, true
	h.loaded, h.sum, h.size = true, sum, int64(len(data))
	return nil
}

// Loaded makes n a host file whose contents, data of hash sum (nil: not
// taken), were read already (the executable a program starts as).
func (fs *FileSystem) Loaded(n *Node, hostPath string, data []byte, sum *[32]byte) error {
	if err := fs.budget.Charge(FileBytes, int64(len(data))); err != nil {
		return err
	}
	n.data, n.shared = data, true
	n.host = &hostFile{path: hostPath, size: int64(len(data)), loaded: true, sum: sum}
	return nil
}

// sumOf is the hash of the host contents n was loaded with, taken now if
// the reader took none: while they are n's data still, shared
// (moveContents takes it before they go).
func (h *hostFile) sumOf(n *Node) [32]byte {
	if h.sum == nil && h.loaded {
		sum := sha256.Sum256(n.data)
		h.sum = &sum
	}
	if h.sum == nil {
		return [32]byte{}
	}
	return *h.sum
}
