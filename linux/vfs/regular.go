package vfs

import (
	"math"

	"golang.org/x/sys/unix"
)

// MaxFileSize is the largest offset and file size, tmpfs's
// (MAX_LFS_FILESIZE): the program's files are in memory. Before that the
// 1 GiB of all files runs out (ENOSPC).
const MaxFileSize = math.MaxInt64

// Open opens node n, found at path, with flags: a regular file, a
// directory or a device, by what n is. It counts as open until released.
func (fs *FileSystem) Open(n *Node, path string, flags uint64) *OpenFile {
	n.opened()
	return NewOpenFile(fs.kindOf(n), path, flags)
}

// kindOf is the kind of file node n is.
func (fs *FileSystem) kindOf(n *Node) File {
	switch {
	case n.Dir:
		return &directory{nodeFile{fs: fs, n: n}}
	case n.dev != nil:
		return &deviceFile{nodeFile{fs: fs, n: n}}
	}
	return &regular{nodeFile{fs: fs, n: n}}
}

// nodeFile is what the kinds of a node share: they never make a reader
// or writer wait.
type nodeFile struct {
	steady
	notTTY
	fs *FileSystem
	n  *Node
}

func (k *nodeFile) Node() *Node                  { return k.n }
func (k *nodeFile) Release()                     { k.fs.closed(k.n) }
func (k *nodeFile) save(sv *Saver, s *SavedFile) { s.Node = sv.Node(k.n) }

// regular is an open regular file: its contents in the tree.
type regular struct{ nodeFile }

func (r *regular) Read(_ *OpenFile, b []byte, off int64) (int, error) {
	if off >= int64(len(r.n.data)) {
		return 0, nil
	}
	r.n.pull(off, min(off+int64(len(b)), int64(len(r.n.data))))
	return copy(b, r.n.data[off:]), nil
}

func (r *regular) Write(_ *OpenFile, b []byte, off int64) (int, error) {
	switch {
	case len(b) == 0:
		return 0, nil // nothing written, the file not extended
	case off >= MaxFileSize:
		return 0, unix.EFBIG
	}
	// generic_write_checks: what fits below the largest offset.
	b = b[:min(int64(len(b)), MaxFileSize-off)]
	n := r.n
	end := off + int64(len(b))
	if err := n.sealedAgainst(int64(len(n.data)), max(end, int64(len(n.data))), true); err != nil {
		return 0, err
	}
	if end > int64(len(n.data)) {
		if err := r.fs.Resize(n, end); err != nil {
			return 0, err
		}
	}
	r.fs.own(n)
	n.Written = true
	r.fs.Modified(n)
	copy(n.data[off:], b)
	n.push(off, end)
	return len(b), nil
}

// Seek moves the offset as tmpfs does (generic_file_llseek_size up to
// MAX_LFS_FILESIZE).
func (r *regular) Seek(f *OpenFile, off int64, whence uint64) (uint64, error) {
	size := int64(len(r.n.data))
	switch whence {
	case unix.SEEK_CUR:
		if off == 0 {
			return uint64(f.Off), nil
		}
		off += f.Off // wraps negative past the largest offset, as in C
	case unix.SEEK_END:
		off += size
	case unix.SEEK_DATA, unix.SEEK_HOLE:
		// A file here has no holes: its data runs to its end.
		if off < 0 || off >= size {
			return 0, unix.ENXIO
		}
		if whence == unix.SEEK_HOLE {
			off = size
		}
	}
	if off < 0 {
		return 0, unix.EINVAL
	}
	f.Off = off
	return uint64(off), nil
}

// directory is an open directory: getdents reads its entries.
type directory struct{ nodeFile }

func (*directory) Read(*OpenFile, []byte, int64) (int, error)  { return 0, unix.EISDIR }
func (*directory) Write(*OpenFile, []byte, int64) (int, error) { return 0, unix.EISDIR }

// Seek moves a directory's position, which getdents reads from, as
// dcache_dir_lseek does.
func (*directory) Seek(f *OpenFile, off int64, whence uint64) (uint64, error) {
	switch whence {
	case unix.SEEK_CUR:
		off += int64(f.DirPos)
	case unix.SEEK_SET:
	default:
		return 0, unix.EINVAL
	}
	if off < 0 {
		return 0, unix.EINVAL
	}
	f.DirPos = int(min(off, 1<<30))
	return uint64(off), nil
}
