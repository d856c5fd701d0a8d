package linux

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/internal/regfile"
)

// File is a host file the program sees at a guest path. Its contents are
// an input, named by their hash like a disk's base image: a recording
// keeps Size and SHA256, and a replay reads the file again and refuses it
// if they differ.
type File struct {
	Guest  string // absolute path in the guest
	Host   string // where it is on the host
	Size   int64
	SHA256 [32]byte
	Data   []byte // its contents, when they come with it (a packed tape) rather than from Host
}

// node is a file or directory of the program's file system: the host files
// it was given, read-only in spirit (a write copies them into memory), the
// directories leading to them, and what the program itself creates.
type node struct {
	ino      uint64
	dir      bool
	mode     uint32           // permission bits
	data     []byte           // a file's contents
	children map[string]*node // a directory's entries
	dev      device           // a device file's behaviour, or nil
	written  bool             // the program created or changed it (KeepWrites)
}

// device is what a device file does on read and write.
type device interface {
	read(k *Kernel, b []byte) (int, error)
	write(b []byte) (int, error)
}

// fileSystem is the tree the program's paths resolve in.
type fileSystem struct {
	root    *node
	nextIno uint64
	held    int64 // bytes of file contents held in host memory
}

// Bounds on the files a program sees: their contents are held in host
// memory, and every byte is named by the tape.
const (
	maxFiles     = 4096
	maxFileBytes = 1 << 30 // all files together
	maxPathDepth = 64
)

func newFileSystem() *fileSystem {
	fs := &fileSystem{}
	fs.root = fs.newNode(true, 0o755)
	return fs
}

func (fs *fileSystem) newNode(dir bool, mode uint32) *node {
	fs.nextIno++
	n := &node{ino: fs.nextIno, dir: dir, mode: mode}
	if dir {
		n.children = map[string]*node{}
	}
	return n
}

// clean makes p absolute (the working directory is /) and resolves . and
// .. lexically; symbolic links do not exist here.
func clean(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return path.Clean(p)
}

// maxNameLen is NAME_MAX: the longest name of a directory entry.
const maxNameLen = 255

// lookup finds the node at p as Linux's path walk does, component by
// component rather than by cleaning p first: every component a name, "."
// or ".." follows must be a directory ("/etc/passwd/.." is ENOTDIR, not
// /etc), ".." at the root stays there, and a trailing slash asks for a
// directory. A relative p starts at the root, the working directory.
func (fs *fileSystem) lookup(p string) (*node, error) {
	if p == "" {
		return nil, unix.ENOENT
	}
	walked := []*node{fs.root} // the directories passed, for ".."
	for _, part := range strings.Split(p, "/") {
		at := walked[len(walked)-1]
		if !at.dir {
			return nil, unix.ENOTDIR
		}
		switch part {
		case "", ".":
		case "..":
			if len(walked) > 1 {
				walked = walked[:len(walked)-1]
			}
		default:
			if len(part) > maxNameLen {
				return nil, unix.ENAMETOOLONG
			}
			next, ok := at.children[part]
			if !ok {
				return nil, unix.ENOENT
			}
			walked = append(walked, next)
		}
	}
	return walked[len(walked)-1], nil
}

// entry is the last component of a path a call creates, removes or
// renames: the directory it is (or would be) in, its name, and whether the
// path ended in a slash, which asks for a directory.
type entry struct {
	dir   *node
	name  string // "" for the root itself, or "." or "..": no entry to make or remove
	slash bool
}

// named reports whether e names an entry of its directory, not the root,
// "." or "..", which Linux's calls that create or remove refuse.
func (e entry) named() bool { return e.name != "" && e.name != "." && e.name != ".." }

// parent finds the directory p's last component is in, walking the rest
// of p as lookup does.
func (fs *fileSystem) parent(p string) (entry, error) {
	if p == "" {
		return entry{}, unix.ENOENT
	}
	trimmed := strings.TrimRight(p, "/")
	e := entry{slash: len(trimmed) < len(p)}
	dir := "/"
	if i := strings.LastIndex(trimmed, "/"); i >= 0 {
		dir, e.name = trimmed[:i+1], trimmed[i+1:]
	} else {
		e.name = trimmed
	}
	if len(e.name) > maxNameLen {
		return entry{}, unix.ENAMETOOLONG
	}
	d, err := fs.lookup(dir)
	if err != nil {
		return entry{}, err
	}
	if !d.dir {
		return entry{}, unix.ENOTDIR
	}
	e.dir = d
	return e, nil
}

// mkdirAll makes the directories of p, as the ones leading to a host file.
func (fs *fileSystem) mkdirAll(p string) (*node, error) {
	n := fs.root
	parts := strings.Split(strings.TrimPrefix(clean(p), "/"), "/")
	if len(parts) > maxPathDepth {
		return nil, fmt.Errorf("path %s is deeper than %d", p, maxPathDepth)
	}
	for _, part := range parts {
		if part == "" {
			continue
		}
		next, ok := n.children[part]
		if !ok {
			next = fs.newNode(true, 0o755)
			n.children[part] = next
		}
		if !next.dir {
			return nil, fmt.Errorf("%s: %s is a file", p, part)
		}
		n = next
	}
	return n, nil
}

// add places a file with data at p, replacing nothing.
func (fs *fileSystem) add(p string, data []byte, mode uint32) (*node, error) {
	if fs.nextIno >= maxFiles {
		return nil, fmt.Errorf("more than %d files", maxFiles)
	}
	if fs.held+int64(len(data)) > maxFileBytes {
		return nil, fmt.Errorf("the program's files take more than %d bytes", maxFileBytes)
	}
	dir, name := path.Split(clean(p))
	d, err := fs.mkdirAll(dir)
	if err != nil {
		return nil, err
	}
	if _, ok := d.children[name]; ok {
		return nil, fmt.Errorf("%s is given twice", p)
	}
	n := fs.newNode(false, mode)
	n.data = data
	d.children[name] = n
	fs.held += int64(len(data))
	return n, nil
}

// addHost reads f.Host into the tree at f.Guest, checking it against the
// recorded size and hash when they are set (a replay), else filling them
// in (a recording).
func (fs *fileSystem) addHost(f *File) error {
	data := f.Data
	if data == nil {
		var err error
		if data, err = regfile.ReadFile(f.Host, maxFileBytes, "file"); err != nil {
			return err
		}
	}
	if f.SHA256 != ([32]byte{}) {
		if sum := sha256.Sum256(data); sum != f.SHA256 || int64(len(data)) != f.Size {
			return fmt.Errorf("%s is not the file recorded as %s (%d bytes, sha256 %x…; recorded %d bytes, sha256 %x…)",
				f.Host, f.Guest, len(data), sum[:6], f.Size, f.SHA256[:6])
		}
	}
	// A recording's hash is taken when it asks (Kernel.Program): a live
	// run never needs it.
	f.Size, f.Data = int64(len(data)), nil
	mode := uint32(0o644)
	if st, err := os.Stat(f.Host); err == nil && st.Mode()&0o111 != 0 {
		mode = 0o755
	}
	_, err := fs.add(f.Guest, data, mode)
	return err
}

// Contents are the bytes of the file at the guest path p, as the program
// started with them (before it runs): what packing a tape stores.
func (k *Kernel) Contents(p string) ([]byte, bool) {
	n, err := k.fs.lookup(p)
	if err != nil || n.dir || n.dev != nil {
		return nil, false
	}
	return n.data, true
}

// names is a directory's entries, sorted: getdents returns them in this
// order, the same in every replay.
func (n *node) names() []string { return slices.Sorted(maps.Keys(n.children)) }

// Mount lists the host files under host — a file, or a directory walked
// recursively (regular files only; symbolic links followed to them) — at
// the same places under guest.
func Mount(host, guest string) ([]File, error) {
	if !path.IsAbs(guest) {
		return nil, fmt.Errorf("guest path %q is not absolute", guest)
	}
	abs, err := filepath.Abs(host)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []File{{Guest: clean(guest), Host: abs}}, nil
	}
	var out []File
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == abs {
				return err
			}
			return nil // an unreadable entry below: not the program's to see
		}
		if d.IsDir() {
			return nil
		}
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			return nil // not a regular file: not something a program reads whole
		}
		if len(out) >= maxFiles {
			return fmt.Errorf("%s holds more than %d files", host, maxFiles)
		}
		rel, err := filepath.Rel(abs, p)
		if err != nil {
			return err
		}
		out = append(out, File{Guest: clean(path.Join(guest, filepath.ToSlash(rel))), Host: p})
		return nil
	})
	return out, err
}
