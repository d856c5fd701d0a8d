package vfs

import (
	"cmp"
	"maps"
	"slices"
)

// Forgetting the host. What the tree learns of the host's files is a
// node per name asked or listed, charged to the budget's Nodes with the
// program's own files; a program that walks more of the host than that
// (find /usr: 150 000 names) would run out of nodes where it does not on
// Linux. So, at a point where no call holds a node it found (Forget is
// called between system calls), a tree past a high mark forgets host
// directories' entries until it is under a low one: the directories
// learned first (by inode), whose entries are all host files or
// directories as the host gave them — nothing made, removed, renamed,
// written or changed by the program there, nothing open, mapped or a
// working directory, nothing learned last — and have no entries of their
// own learned. The directory stays, knowing nothing: a later look asks
// the host again, an input logged like the first. Which directories are forgotten depends on
// the tree and its inode numbers alone, so a replay, or a replay restored
// from a checkpoint, forgets what its recording forgot.

// The marks, in nodes held.
const (
	forgetHigh = MaxNodes * 7 / 8
	forgetLow  = MaxNodes / 2
	// forgetRetry is how many more nodes must be held before a pass that
	// could not get under the high mark is tried again: the program's own
	// files are never forgotten, and a pass looks at the whole tree.
	forgetRetry = MaxNodes / 16
	// forgetRecent: a directory with an entry among the nodes made last
	// is kept — a walk that has just looked at an entry (find's stat of a
	// directory before it opens it) finds the same one, with the same
	// inode number, when it goes on.
	forgetRecent = 1024
)

// Forget forgets host directories' entries if the tree holds more nodes
// than the high mark (see above). pinned says which nodes the kernel
// holds (working directories).
func (fs *FileSystem) Forget(pinned func(*Node) bool) {
	held := fs.budget[Nodes]
	if held <= forgetHigh || held < fs.forgotAt+forgetRetry {
		return
	}
	for fs.budget[Nodes] > forgetLow {
		dirs := fs.forgettable(pinned)
		if len(dirs) == 0 {
			break
		}
		for _, d := range dirs {
			fs.forgetEntries(d)
			if fs.budget[Nodes] <= forgetLow {
				break
			}
		}
	}
	fs.forgotAt = 0
	if fs.budget[Nodes] > forgetHigh {
		fs.forgotAt = fs.budget[Nodes]
	}
}

// ForgotAt is the count of nodes at which a pass last failed to get
// under the high mark (0 if the last did not): part of a checkpoint, as
// it decides when the next pass runs.
func (fs *FileSystem) ForgotAt() int64 { return fs.forgotAt }

// SetForgotAt restores ForgotAt.
func (fs *FileSystem) SetForgotAt(n int64) { fs.forgotAt = n }

// forgettable are the directories whose entries may be forgotten, in
// inode order.
func (fs *FileSystem) forgettable(pinned func(*Node) bool) []*Node {
	var dirs []*Node
	var walk func(d *Node)
	walk = func(d *Node) {
		if fs.mayForget(d, pinned) {
			dirs = append(dirs, d)
			return
		}
		for _, c := range d.children {
			if c.Dir {
				walk(c)
			}
		}
	}
	walk(fs.root)
	slices.SortFunc(dirs, func(a, b *Node) int { return cmp.Compare(a.Ino, b.Ino) })
	return dirs
}

// mayForget reports whether d's entries may be forgotten: it learned
// some, and they are as the host gave them and held by no one.
func (fs *FileSystem) mayForget(d *Node, pinned func(*Node) bool) bool {
	h := d.host
	if h == nil || h.edited || d.opens > 0 || !h.listed && len(h.asked) == 0 {
		return false
	}
	for _, c := range d.children {
		ch := c.host
		switch {
		case ch == nil, ch.edited, c.Written, c.Mapped, c.opens > 0, c.links > 1, pinned(c), c.Ino+forgetRecent > fs.nextIno,
			c.Dir && (len(c.children) > 0 || ch.listed || len(ch.asked) > 0):
			return false
		}
	}
	return true
}

// forgetEntries frees d's entries and what it asked: d knows nothing of
// the host's directory again.
func (fs *FileSystem) forgetEntries(d *Node) {
	for _, name := range slices.Sorted(maps.Keys(d.children)) {
		c := d.children[name]
		d.unput(name)
		fs.dropLink(c)
	}
	fs.budget.Release(Nodes, int64(len(d.host.asked)))
	d.host.asked, d.host.listed = nil, false
}
