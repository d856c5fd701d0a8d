package vfs

import "bytes"

// shrinkSlack is how much capacity past its end a file's contents may
// keep when they shrink before they move to an array that fits.
const shrinkSlack = 64 << 10

// Resize makes n's contents size bytes long, zeros past the old end,
// charging or releasing the difference (ENOSPC past the budget).
// Contents that outgrow their array move to one with a quarter of
// headroom, copied once: growing never holds a zeroed temporary beside
// them, and a file of the whole budget holds at most 1.25 times it.
func (fs *FileSystem) Resize(n *Node, size int64) error {
	if err := fs.Load(n); err != nil {
		return err
	}
	old := int64(len(n.data))
	if err := n.sealedAgainst(old, size, false); err != nil {
		return err
	}
	fs.own(n) // growing within the array clears bytes past the end
	if size > old {
		if err := fs.budget.Charge(FileBytes, size-old); err != nil {
			return err
		}
	} else {
		fs.budget.Release(FileBytes, old-size)
	}
	switch {
	case size > int64(cap(n.data)):
		grown := make([]byte, size, size+max(size/4, 64))
		copy(grown, n.data)
		fs.moveContents(n, grown)
	case size >= old:
		n.data = n.data[:size]
		clear(n.data[old:]) // what a shrink left past the end
	case int64(cap(n.data))-size > shrinkSlack:
		fs.moveContents(n, bytes.Clone(n.data[:size]))
	default:
		n.data = n.data[:size]
	}
	n.push(min(old, size), max(old, size)) // zeros either way
	return nil
}

// Discard empties n's contents (O_TRUNC), releasing them.
func (fs *FileSystem) Discard(n *Node) {
	size := int64(len(n.data))
	fs.budget.Release(FileBytes, size)
	fs.moveContents(n, nil)
	n.push(0, size)
	if h := n.host; h != nil {
		h.loaded, h.size = true, 0 // the host's contents are never read now
	}
}

// moveContents gives n new contents, and the mappings that held its old
// ones the new: a mapping names the file it maps, whose contents those
// are now (a probe resolves in them), and the old array is freed rather
// than held outside the budget.
func (fs *FileSystem) moveContents(n *Node, data []byte) {
	if h := n.host; h != nil && n.shared {
		h.sumOf(n) // the host's contents go: their hash is kept
	}
	old := n.data
	n.data, n.shared = data, false
	if n.Mapped && cap(old) > 0 && fs.remap != nil {
		fs.remap(old, data)
	}
}

// own gives n contents of its own before they change, if they are shared.
func (fs *FileSystem) own(n *Node) {
	if n.shared {
		fs.moveContents(n, bytes.Clone(n.data))
	}
}

// unlinked is told that n left its directory (unlink, rmdir, a rename
// over it): it is freed now, or when its last open file closes.
func (fs *FileSystem) unlinked(n *Node) {
	n.removed = true
	if n.opens == 0 {
		fs.free(n)
	}
}

// opened is told that an open file of n was made.
func (n *Node) opened() { n.opens++ }

// closed is told that an open file of n closed.
func (fs *FileSystem) closed(n *Node) {
	n.opens--
	if n.removed && n.opens == 0 {
		fs.free(n)
	}
}

// free releases a node no one can reach any more, and its contents; a
// directory still holding entries (a snapshot's) releases them too.
func (fs *FileSystem) free(n *Node) {
	for name, c := range n.children {
		n.unput(name)
		fs.dropLink(c)
	}
	if !n.Dir && n.dev == nil {
		fs.budget.Release(FileBytes, int64(len(n.data)))
		fs.moveContents(n, nil)
	}
	fs.budget.Release(Nodes, 1)
}

// Snapshot makes a read-only file holding data in no directory, as
// Linux's /proc makes a file's contents when it is read: it is freed when
// its last open file closes, so the caller opens it at once.
func (fs *FileSystem) Snapshot(data []byte) (*Node, error) {
	n, err := fs.NewNode(false, 0o444)
	if err != nil {
		return nil, err
	}
	if err := fs.budget.Charge(FileBytes, int64(len(data))); err != nil {
		fs.budget.Release(Nodes, 1)
		return nil, err
	}
	n.data, n.removed = data, true
	return n, nil
}

// Link is a symbolic link of a snapshot directory: its name and target.
type Link struct{ Name, Target string }

// SnapshotDir makes a directory of symbolic links, listed in the order
// given, in no directory (/proc/self/fd): freed with its links when its
// last open file closes, so the caller opens it at once.
func (fs *FileSystem) SnapshotDir(links []Link) (*Node, error) {
	d, err := fs.NewNode(true, 0o500)
	if err != nil {
		return nil, err
	}
	d.removed = true
	for _, l := range links {
		if err := fs.AddSnapshotLink(d, l.Name, l.Target); err != nil {
			fs.free(d)
			return nil, err
		}
	}
	return d, nil
}

// AddSnapshotLink adds the link name, to target, to a snapshot directory
// d (/proc/self/fd's, the descriptor it was opened as).
func (fs *FileSystem) AddSnapshotLink(d *Node, name, target string) error {
	n, err := fs.NewNode(false, 0o777)
	if err != nil {
		return err
	}
	n.Link = target
	fs.link(d, name, n)
	return nil
}
