package vfs

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// SavedNode is a file, directory or symbolic link. A host file the
// program never wrote has no Data: Host names its contents, read again
// when restored; a device has none either (Device names it).
type SavedNode struct {
	Ino      uint64
	Dir      bool
	Mode     uint32
	Written  bool
	Data     []byte
	Children map[string]int // indices into the nodes
	Order    []string       // a directory's entries in its listing's order: Children's names, each once
	Link     string
	UID, GID uint32
	Times    Times
	Other    uint32 // a host FIFO's, socket's or device's type
	Device   string // a device file's name (/dev's)
	Host     *SavedHost
	MemFD    bool
	Seals    Seals
	Socket   int // a socket file's: 1 + its socket's index, 0 for none
}

// SavedHost is where on the host a node comes from, and what of it the
// tree had read.
type SavedHost struct {
	Path   string
	Size   int64
	Loaded bool
	SHA256 [32]byte
	Listed bool
	Asked  []string // sorted
	Edited bool
	Nlink  uint32
}

// Node numbers n and everything under it.
func (sv *Saver) Node(n *Node) int {
	if i, ok := sv.nodes[n]; ok {
		return i
	}
	i := len(sv.Nodes)
	sv.nodes[n] = i
	sv.order = append(sv.order, n)
	sv.Nodes = append(sv.Nodes, SavedNode{Ino: n.Ino, Dir: n.Dir, Mode: n.Mode, Written: n.Written, Link: n.Link,
		UID: n.UID, GID: n.GID, Times: n.Times, Other: n.other, Device: n.devName, MemFD: n.memfd, Seals: n.seals})
	if h := n.host; h != nil {
		sv.Nodes[i].Host = &SavedHost{Path: h.path, Size: h.size, Loaded: h.loaded, SHA256: h.sumOf(n), Listed: h.listed,
			Asked: slices.Sorted(maps.Keys(h.asked)), Edited: h.edited, Nlink: h.nlink}
	}
	if n.Written || n.host == nil && n.dev == nil {
		sv.Nodes[i].Data = n.Contents()
	}
	if n.sock != nil {
		sv.Nodes[i].Socket = 1 + sv.socket(n.sock)
	}
	if n.Dir {
		children := map[string]int{}
		names := n.Names()
		for _, name := range names {
			children[name] = sv.Node(n.children[name])
		}
		sv.Nodes[i].Children, sv.Nodes[i].Order = children, names
	}
	return i
}

// SameAs is a numbered regular file whose contents are data, if there is
// one (a mapping's contents are saved as its file's when they are).
func (sv *Saver) SameAs(data []byte) *Node {
	for _, n := range sv.order {
		if n.IsRegular() && bytes.Equal(n.data, data) {
			return n
		}
	}
	return nil
}

// checkNodes checks that the nodes form a tree under nodes[0], a
// directory, each with its own inode; a file may be the entry of several
// (hard links), a directory of one.
func checkNodes(nodes []SavedNode, nextIno uint64) error {
	if !nodes[0].Dir {
		return fmt.Errorf("the root is not a directory")
	}
	parents := make([]int, len(nodes))
	inos := map[uint64]bool{}
	for i, n := range nodes {
		if n.Ino == 0 || n.Ino > nextIno || inos[n.Ino] {
			return fmt.Errorf("file %d: inode %d (next %d), or given twice", i, n.Ino, nextIno)
		}
		inos[n.Ino] = true
		if !n.Dir && len(n.Children) > 0 || n.Dir && len(n.Data) > 0 {
			return fmt.Errorf("file %d: a directory with contents, or a file with entries", i)
		}
		if err := checkKind(n); err != nil {
			return fmt.Errorf("file %d: %v", i, err)
		}
		for name, c := range n.Children {
			if c <= 0 || c >= len(nodes) || parents[c] != 0 && nodes[c].Dir || !validName(name) {
				return fmt.Errorf("file %d: entry %q is file %d", i, name, c)
			}
			parents[c] = i + 1
		}
		if err := checkOrder(n); err != nil {
			return fmt.Errorf("file %d: %v", i, err)
		}
	}
	return nil
}

// checkOrder checks that a directory's order lists each of its entries
// once, and nothing else.
func checkOrder(n SavedNode) error {
	if len(n.Order) != len(n.Children) {
		return fmt.Errorf("an order of %d names for %d entries", len(n.Order), len(n.Children))
	}
	seen := make(map[string]bool, len(n.Order))
	for _, name := range n.Order {
		if _, ok := n.Children[name]; !ok || seen[name] {
			return fmt.Errorf("%q in the order: no entry, or twice", name)
		}
		seen[name] = true
	}
	return nil
}

// checkKind checks what makes a saved node a link, device or host file.
func checkKind(n SavedNode) error {
	switch {
	case n.Link != "" && (n.Dir || len(n.Data) > 0 || len(n.Link) >= unix.PathMax || n.Other != 0 || n.Device != ""):
		return fmt.Errorf("a symbolic link to %d bytes that is more", len(n.Link))
	case n.Other != 0 && (n.Dir || n.Device != "" || !slices.Contains([]uint32{unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK}, n.Other)):
		return fmt.Errorf("host file type %#o", n.Other)
	case n.Mode&^0o7777 != 0:
		return fmt.Errorf("mode %#o is not permission bits", n.Mode)
	case n.Seals&^AllSeals != 0 || n.Seals != 0 && !n.MemFD,
		n.MemFD && (n.Dir || n.Link != "" || n.Other != 0 || n.Device != "" || n.Host != nil):
		return fmt.Errorf("a memfd (%v) with seals %#x that is more", n.MemFD, n.Seals)
	}
	h := n.Host
	if h == nil {
		return nil
	}
	switch {
	case !path.IsAbs(h.Path) || len(h.Path) >= unix.PathMax || h.Size < 0 || h.Size > MaxFileBytes:
		return fmt.Errorf("host file %.64q of %d bytes", h.Path, h.Size)
	case len(h.Asked) > MaxNodes || h.Listed && len(h.Asked) > 0 || !n.Dir && (h.Listed || len(h.Asked) > 0):
		return fmt.Errorf("host directory %.64q with %d names asked", h.Path, len(h.Asked))
	case h.Loaded && (n.Dir || n.Link != "" || n.Other != 0):
		return fmt.Errorf("host %.64q: contents of what is not a regular file", h.Path)
	}
	for _, name := range h.Asked {
		if !validName(name) {
			return fmt.Errorf("host directory %.64q: name %.64q", h.Path, name)
		}
	}
	return nil
}

// validName reports whether name can be a directory entry's.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= MaxNameLen && !strings.ContainsAny(name, "/\x00")
}
