package linux

import (
	"fmt"
	"maps"
	"slices"

	"github.com/reprise-vm/reprise/linux/mm"
)

// Shared memory: MAP_SHARED mappings, anonymous or of a file, and the
// futexes in them.
//
// A file mapped shared has one shared object (mm.Object) while any range
// maps it: its pages are the file's pages, in guest frames every mapping
// writes directly. The file's contents in the tree stay what read and
// write use; the two are kept one (filePages): a page the object holds is
// its frame's bytes, copied into the tree's contents before a call reads
// them and from them after a call changes them. When no range maps the
// object any more its pages go back into the contents, and it is gone.

// fileObject is the shared object of n's shared mappings, made when it is
// first mapped shared.
func (k *Kernel) fileObject(n *node) *mm.Object {
	if o := k.shm[n]; o != nil {
		return o
	}
	o := k.fr.NewObject(nil, nil)
	k.attach(n, o)
	return o
}

// attach makes o the shared object of n's mappings: its pages start as
// n's, n's reads and writes go through them, and n's contents take them
// back when o is idle.
func (k *Kernel) attach(n *node, o *mm.Object) {
	o.Attach(n.FillPage, func() {
		n.DropPages()
		delete(k.shm, n)
	})
	k.fs.SetPages(n, filePages{k.fr, o})
	k.shm[n] = o
}

// filePages are a file's pages in its shared object's frames (vfs.Pages).
type filePages struct {
	fr *mm.Frames
	o  *mm.Object
}

func (p filePages) Pull(data []byte, off, end int64) {
	p.each(data, off, end, func(b, page []byte) { copy(b, page) })
}

func (p filePages) Push(data []byte, off, end int64) {
	p.each(data, off, end, func(b, page []byte) { clear(page[copy(page, b):]) })
}

// each calls fn with each part of [off, end) that a page of the object
// holds: data's bytes there (fewer, or none, past data's end) and the
// page's.
func (p filePages) each(data []byte, off, end int64, fn func(b, page []byte)) {
	for at := off &^ (pageSize - 1); at < end; at += pageSize {
		frame := p.fr.ObjectPage(p.o, uint64(at)/pageSize)
		if frame == nil {
			continue
		}
		lo, hi := max(off, at), min(end, at+pageSize)
		size := int64(len(data))
		fn(data[min(lo, size):min(hi, size)], frame[lo-at:hi-at])
	}
}

// futexKey is what a futex is known by: its address in the address space
// of a private mapping, or, in a shared mapping, its frame's physical
// address (as nil), which every process mapping it shares, as Linux keys
// a shared futex by its page. The zero key is no futex.
type futexKey struct {
	as   *mm.Space
	addr uint64
}

// futexKey kinds in a checkpoint.
const (
	futexNone uint8 = iota
	futexPrivate
	futexShared
)

// keyOf is the key of the futex at addr in as; FUTEX_PRIVATE_FLAG keys
// it by its address alone, wherever it is.
func keyOf(as *mm.Space, addr uint64, private bool) futexKey {
	if !private {
		if pa, ok := as.Shared(addr); ok {
			return futexKey{addr: pa}
		}
	}
	return futexKey{as: as, addr: addr}
}

func (k futexKey) kind() uint8 {
	switch {
	case k.as != nil:
		return futexPrivate
	case k.addr != 0:
		return futexShared
	}
	return futexNone
}

// restoredKey is the key a checkpoint saved as addr and kind, of a
// thread of as.
func restoredKey(as *mm.Space, addr uint64, kind uint8) futexKey {
	switch kind {
	case futexPrivate:
		return futexKey{as: as, addr: addr}
	case futexShared:
		return futexKey{addr: addr}
	}
	return futexKey{}
}

// savedFileObject is a file's shared object in a checkpoint.
type savedFileObject struct {
	Node int // an index into the saved nodes
	Obj  int // the object's ID
}

// saveObjects names each file's shared object, in object order.
func (sv *saver) saveObjects(shm map[*node]*mm.Object) {
	files := slices.SortedFunc(maps.Keys(shm), func(a, b *node) int { return shm[a].ID - shm[b].ID })
	for _, n := range files {
		sv.s.FileObjects = append(sv.s.FileObjects, savedFileObject{Node: sv.Node(n), Obj: shm[n].ID})
	}
}

// checkObjects refuses a file object naming no regular file or no shared
// object, or a file or object named twice.
func checkObjects(s *savedKernel) error {
	nodes, objs := map[int]bool{}, map[int]bool{}
	for _, f := range s.FileObjects {
		i := slices.IndexFunc(s.Frames.Objects, func(o mm.SavedObject) bool { return o.ID == f.Obj })
		if f.Node < 0 || f.Node >= len(s.Nodes) || s.Nodes[f.Node].Dir || i < 0 || nodes[f.Node] || objs[f.Obj] {
			return fmt.Errorf("file %d's shared object %d", f.Node, f.Obj)
		}
		nodes[f.Node], objs[f.Obj] = true, true
	}
	return nil
}

// restoreObjects attaches each file's restored shared object.
func (r *restorer) restoreObjects(fr *mm.Frames) {
	r.k.shm = map[*node]*mm.Object{}
	for _, f := range r.s.FileObjects {
		r.k.attach(r.fs.Nodes[f.Node], fr.Object(f.Obj))
	}
}
