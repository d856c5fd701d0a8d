package vfs

import (
	"cmp"
	"maps"
	"slices"

	"golang.org/x/sys/unix"
)

// Node is a file, directory or symbolic link of the program's file
// system: the host's, learned as the program looks and read-only in
// spirit (a write changes the tree's copy), the device files, and what
// the program itself creates.
type Node struct {
	Ino     uint64
	Dir     bool
	Mode    uint32 // permission bits
	Link    string // a symbolic link's target ("" for any other node)
	Written bool   // the program created or changed it (KeepWrites)
	// UID and GID own it; Times are its times (zero: the program's epoch).
	UID, GID uint32
	Times    Times
	// Mapped says a mapping of the program's holds its contents: when
	// they move, FileSystem's Remap is told.
	Mapped bool
	data   []byte // a file's contents
	// pages hold some of data's pages, written directly by the program
	// (its shared mappings): theirs are the bytes, not data's.
	pages Pages
	// shared says data is held elsewhere too (the Program's image,
	// another kernel's tree): copied before it changes.
	shared   bool
	children map[string]*Node // a directory's entries
	// order places a directory's entries in its listing, nextOrder the
	// next new one's place.
	order     map[string]uint64
	nextOrder uint64
	parent    *Node     // a directory's: the one it is an entry of (nil for the root)
	links     int       // a file's: the directory entries that name it (link)
	locks     *locks    // its advisory locks (lock.go), nil until locked
	dev       Device    // a device file's behaviour, or nil
	devName   string    // which device (a checkpoint names it)
	other     uint32    // the type of a host FIFO, socket or device (S_IFIFO…), never opened
	host      *hostFile // where on the host it comes from, or nil
	opens     int       // open files of it
	removed   bool      // gone from the tree; freed when no longer open
	memfd     bool      // made by memfd_create (memfd.go)
	sock      *Socket   // a socket file's socket, while it is open
	seals     Seals     // a memfd's
}

// Freed reports whether n is gone from the tree and open nowhere: what
// it held is released.
func (n *Node) Freed() bool { return n.removed && n.opens == 0 }

// Contents are a file's bytes. The slice is the node's: a caller that
// keeps it (a mapping) sets Mapped.
func (n *Node) Contents() []byte {
	n.pull(0, int64(len(n.data)))
	return n.data
}

// Pages are a file's pages held elsewhere too, where the program writes
// them directly (the frames of its shared mappings): for the pages they
// hold, theirs are the file's bytes.
type Pages interface {
	// Pull copies their bytes of [off, end) over data's.
	Pull(data []byte, off, end int64)
	// Push copies data's bytes of [off, end) to them, zeros past data's
	// end.
	Push(data []byte, off, end int64)
}

// SetPages makes p hold n's pages from now on. n's contents become its
// own first: the program is about to write them through p, and another
// holder of them must not see it.
func (fs *FileSystem) SetPages(n *Node, p Pages) {
	fs.own(n)
	n.pages = p
}

// DropPages takes n's bytes back from its pages, which hold them no
// longer.
func (n *Node) DropPages() {
	n.pull(0, int64(len(n.data)))
	n.pages = nil
}

// FillPage copies n's bytes of page (4 KiB) into b: its pages' first
// contents.
func (n *Node) FillPage(page uint64, b []byte) {
	if off := page * 4096; off < uint64(len(n.data)) {
		copy(b, n.data[off:])
	}
}

// pull brings n's bytes of [off, end) up to date from its pages.
func (n *Node) pull(off, end int64) {
	if n.pages != nil && off < end {
		n.pages.Pull(n.data, off, end)
	}
}

// push gives n's pages its bytes of [off, end), which a call changed.
func (n *Node) push(off, end int64) {
	if n.pages != nil && off < end {
		n.pages.Push(n.data, off, end)
	}
}

// Share says n's contents are held elsewhere too: the first change
// copies them, so the other holders never see it.
func (n *Node) Share() { n.shared = true }

// nameOf is c's name among d's entries.
func (d *Node) nameOf(c *Node) (string, bool) {
	for name, o := range d.children {
		if o == c {
			return name, true
		}
	}
	return "", false
}

// Links is how many directory entries name n, as stat's st_nlink: a
// file's hard links; a directory's entry, its own "." and each
// subdirectory's "..".
func (n *Node) Links() int {
	if !n.Dir {
		return n.links
	}
	// A directory's: 2 and one per subdirectory, as Linux's file systems
	// count ("." and each subdirectory's ".."). Of a host directory not
	// listed, the tree knows only some: the host's count, and the ones
	// the program made there.
	dirs, made := 0, 0
	for _, c := range n.children {
		if c.Dir {
			dirs++
			if c.host == nil {
				made++
			}
		}
	}
	if h := n.host; h != nil && !h.listed {
		return max(int(h.nlink)+made, 2+dirs)
	}
	return 2 + dirs
}

// Size is the length of a file's contents (a symbolic link's: its
// target's), as the host gave it until they are read.
func (n *Node) Size() int64 {
	switch {
	case n.Link != "":
		return int64(len(n.Link))
	case n.host != nil && !n.host.loaded && !n.Dir:
		return n.host.size
	}
	return int64(len(n.data))
}

// IsDevice reports whether n is a device file.
func (n *Node) IsDevice() bool { return n.dev != nil }

// DeviceMinor is a device's minor number under major 1, Linux's memory
// devices (drivers/char/mem.c); 0 for a node that is none.
func (n *Node) DeviceMinor() uint32 { return memMinors[n.devName] }

var memMinors = map[string]uint32{"null": 3, "zero": 5, "random": 8, "urandom": 9}

// IsRegular reports whether n is a regular file: not a directory, device,
// symbolic link or other host file.
func (n *Node) IsRegular() bool { return !n.Dir && n.dev == nil && n.Link == "" && n.other == 0 }

// IsForeign reports whether n is a host FIFO, socket or device: seen in
// listings and stat, never opened.
func (n *Node) IsForeign() bool { return n.other != 0 }

// IsSymlink reports whether n is a symbolic link.
func (n *Node) IsSymlink() bool { return n.Link != "" }

// Type is n's file type, as st_mode's S_IFMT bits.
func (n *Node) Type() uint32 {
	switch {
	case n.Dir:
		return unix.S_IFDIR
	case n.dev != nil:
		return unix.S_IFCHR
	case n.Link != "":
		return unix.S_IFLNK
	case n.other != 0:
		return n.other
	}
	return unix.S_IFREG
}

// Child is a directory's entry name.
func (n *Node) Child(name string) (*Node, bool) {
	c, ok := n.children[name]
	return c, ok
}

// Entries is how many entries a directory has.
func (n *Node) Entries() int { return len(n.children) }

// Names is the entries of a directory the tree holds, in its listing's
// order (List learns a host directory's first).
func (n *Node) Names() []string {
	return slices.SortedFunc(maps.Keys(n.children), func(a, b string) int { return cmp.Compare(n.order[a], n.order[b]) })
}

// Holds reports whether directory d is n or lies below it.
func (n *Node) Holds(d *Node) bool {
	if n == d {
		return true
	}
	for _, c := range n.children {
		if c.Dir && c.Holds(d) {
			return true
		}
	}
	return false
}
