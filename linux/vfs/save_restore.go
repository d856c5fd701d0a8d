package vfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// The file system's part of a checkpoint, as plain values, with what
// several parts share (a node, an open file in two descriptor tables, a
// pipe's two ends) named by its index. The contents of host files the
// program never wrote are not kept, only their host path, size and hash:
// a restore reads them again (Host.Reload); a device is kept by name. The
// field names are the checkpoint's layout (gob).

// Saver numbers the nodes, pipes and open files of a state as it meets
// them; Nodes, Pipes and Files are what it saved, by index.
type Saver struct {
	nodes   map[*Node]int
	order   []*Node // by index
	pipes   map[*Pipe]int
	files   map[*OpenFile]int
	sockets map[*Socket]int
	Nodes   []SavedNode
	Pipes   []SavedPipe
	Files   []SavedFile
	Sockets []SavedSocket
}

// NewSaver starts a state with the tree under root: root is node 0.
func NewSaver(root *Node) *Saver {
	sv := &Saver{nodes: map[*Node]int{}, pipes: map[*Pipe]int{}, files: map[*OpenFile]int{}, sockets: map[*Socket]int{}}
	sv.Node(root)
	return sv
}

// Check refuses saved nodes, pipes and open files that do not fit
// together or would take the file system outside its bounds: the state
// comes from a file, as untrusted as a tape.
func Check(nodes []SavedNode, nextIno uint64, pipes []SavedPipe, files []SavedFile, sockets []SavedSocket) error {
	if len(nodes) == 0 || len(nodes) > MaxNodes || nextIno > 1<<62 {
		return fmt.Errorf("%d files, inode %d (at most %d files)", len(nodes), nextIno, MaxNodes)
	}
	if err := checkNodes(nodes, nextIno); err != nil {
		return err
	}
	var held int64
	for _, n := range nodes {
		held += int64(len(n.Data))
	}
	if held > MaxFileBytes {
		return fmt.Errorf("%d bytes of written files (at most %d)", held, MaxFileBytes)
	}
	if err := checkPipes(pipes); err != nil {
		return err
	}
	if err := checkSockets(sockets); err != nil {
		return err
	}
	for i, n := range nodes {
		if n.Socket < 0 || n.Socket > len(sockets) || n.Socket > 0 && (n.Other != unix.S_IFSOCK || !sockets[n.Socket-1].Bound) {
			return fmt.Errorf("file %d: socket %d", i, n.Socket-1)
		}
	}
	for i, s := range sockets {
		for _, r := range s.InFlight {
			for _, f := range r.Files {
				if f < 0 || f >= len(files) {
					return fmt.Errorf("socket %d: open file %d in flight", i, f)
				}
			}
		}
	}
	return checkFiles(files, len(nodes), len(pipes), len(sockets))
}

// index reports whether i is an index of n things, or -1 for none.
func index(i, n int) bool { return i >= -1 && i < n }

// Restored is a checked state's file system, its nodes, pipes and open
// files by index.
type Restored struct {
	FS      *FileSystem
	Nodes   []*Node
	Pipes   []*Pipe
	Files   []*OpenFile
	Sockets []*Socket
}

// Restore builds a checked state's file system. fresh is the tree a new
// kernel made from the same program: its devices, by name, and its host,
// which reads again the host files the state had read, come from it. The
// restored tree charges fresh's budget (Charge counts it again) and tells
// remap of moved mapped contents; its signalfds read signals from
// signals.
func Restore(fresh *FileSystem, nodes []SavedNode, nextIno uint64, pipes []SavedPipe, files []SavedFile, sockets []SavedSocket, console *Console, remap Remap, signals SignalSource) (*Restored, error) {
	devices := map[string]*Node{}
	var walk func(n *Node)
	walk = func(n *Node) {
		if n.dev != nil {
			devices[n.devName] = n
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(fresh.root)
	r := &Restored{Nodes: make([]*Node, len(nodes))}
	for i, sn := range nodes {
		n := &Node{Ino: sn.Ino, Dir: sn.Dir, Mode: sn.Mode, Written: sn.Written, data: sn.Data, Link: sn.Link,
			UID: sn.UID, GID: sn.GID, Times: sn.Times, other: sn.Other, memfd: sn.MemFD, seals: sn.Seals}
		if sn.Device != "" {
			d, ok := devices[sn.Device]
			if !ok || sn.Dir {
				return nil, fmt.Errorf("file %d: no device %q", i, sn.Device)
			}
			n.dev, n.devName = d.dev, d.devName
		}
		if h := sn.Host; h != nil {
			sum := h.SHA256
			n.host = &hostFile{path: h.Path, size: h.Size, loaded: h.Loaded, sum: &sum, listed: h.Listed, edited: h.Edited, nlink: h.Nlink}
			if len(h.Asked) > 0 {
				n.host.asked = map[string]bool{}
				for _, name := range h.Asked {
					n.host.asked[name] = true
				}
			}
			if h.Loaded && !sn.Written {
				if fresh.host == nil {
					return nil, fmt.Errorf("file %d: host file %s, and no host to read it from", i, h.Path)
				}
				data, err := fresh.host.Reload(h.Path, h.Size, h.SHA256)
				if err != nil {
					return nil, fmt.Errorf("file %d: %w", i, err)
				}
				n.data, n.shared = data, true // as Load's: maybe held elsewhere
			}
		}
		if sn.Dir {
			n.children, n.order = map[string]*Node{}, map[string]uint64{}
			for at, name := range sn.Order {
				n.order[name] = uint64(at)
			}
			n.nextOrder = uint64(len(sn.Order))
		}
		r.Nodes[i] = n
	}
	for i, sn := range nodes {
		for name, c := range sn.Children {
			r.Nodes[i].children[name] = r.Nodes[c]
			if r.Nodes[c].Dir {
				r.Nodes[c].parent = r.Nodes[i]
			} else {
				r.Nodes[c].links++
			}
		}
	}
	r.FS = &FileSystem{root: r.Nodes[0], nextIno: nextIno, budget: fresh.budget, remap: remap, host: fresh.host, owner: fresh.owner, groups: fresh.groups, clock: fresh.clock, magic: fresh.magic}
	for _, p := range pipes {
		r.Pipes = append(r.Pipes, p.restore(fresh.budget))
	}
	r.Sockets = restoreSockets(r.FS, sockets)
	for i, sn := range nodes {
		if sn.Socket > 0 {
			s := r.Sockets[sn.Socket-1]
			r.Nodes[i].sock, s.node = s, r.Nodes[i]
		}
	}
	for _, f := range files {
		r.Files = append(r.Files, r.file(f, console, signals))
	}
	r.link(files)
	for i, s := range sockets { // the files in flight, now they are restored
		for _, sr := range s.InFlight {
			fs := make([]*OpenFile, len(sr.Files))
			for j, f := range sr.Files {
				fs[j] = r.Files[f]
			}
			r.Sockets[i].inFlight = append(r.Sockets[i].inFlight, rights{at: sr.At, files: fs})
		}
	}
	return r, nil
}

// Charge adds to b what the restored file system holds: its files and
// directories (removed ones still open included: only those are saved),
// their contents and its open pipes. The nodes' open files are counted,
// and the ones gone from the tree marked, so they are freed when the last
// closes.
func (r *Restored) Charge(b *Budget) {
	for _, f := range r.Files {
		if n := f.Node(); n != nil {
			n.opens++
		}
		b[Watches] += int64(len(f.watchers))
	}
	b[SocketBytes] += int64(len(r.Sockets)) * SocketCapacity
	linked := map[*Node]bool{}
	var walk func(n *Node)
	walk = func(n *Node) {
		linked[n] = true
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(r.Nodes[0])
	for _, n := range r.Nodes {
		n.removed = !linked[n]
		b[Nodes]++
		b[FileBytes] += int64(len(n.data))
		if n.host != nil {
			b[Nodes] += int64(len(n.host.asked))
		}
	}
	for _, p := range r.Pipes {
		if p.readers > 0 || p.writers > 0 { // not one only a waiting thread still names
			b[PipeBytes] += int64(p.capacity)
		}
	}
}

// Mapped marks node i as one whose contents a restored mapping holds, and
// returns them.
func (r *Restored) Mapped(i int) []byte {
	r.Nodes[i].Mapped = true
	return r.Nodes[i].data
}
