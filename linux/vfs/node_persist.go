package vfs

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
)

// SavedNode is a file or directory. A node the program never wrote has no
// Data: the new tree's node of the same inode has it.
type SavedNode struct {
	Ino      uint64
	Dir      bool
	Mode     uint32
	Written  bool
	Data     []byte
	Children map[string]int // indices into the nodes
}

// Node numbers n and everything under it.
func (sv *Saver) Node(n *Node) int {
	if i, ok := sv.nodes[n]; ok {
		return i
	}
	i := len(sv.Nodes)
	sv.nodes[n] = i
	sv.order = append(sv.order, n)
	sv.Nodes = append(sv.Nodes, SavedNode{Ino: n.Ino, Dir: n.Dir, Mode: n.Mode, Written: n.Written})
	if n.Written {
		sv.Nodes[i].Data = n.data
	}
	if n.Dir {
		children := map[string]int{}
		for _, name := range slices.Sorted(maps.Keys(n.children)) {
			children[name] = sv.Node(n.children[name])
		}
		sv.Nodes[i].Children = children
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
		for name, c := range n.Children {
			if c <= 0 || c >= len(nodes) || parents[c] != 0 && nodes[c].Dir || name == "" || name == "." || name == ".." || bytes.ContainsRune([]byte(name), '/') {
				return fmt.Errorf("file %d: entry %q is file %d", i, name, c)
			}
			parents[c] = i + 1
		}
	}
	return nil
}
