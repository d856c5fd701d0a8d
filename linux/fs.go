package linux

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/host/userfile"
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
	// Mode is the permission bits the program sees: 0o755 for a file
	// the host lets its owner execute, else 0o644. A recording takes it
	// from the host file, a replay from the tape: a packed tape replays
	// where the file is not. 0 is a tape from before modes were kept.
	Mode uint32
	Data []byte // its contents, when they come with it (a packed tape) rather than from Host
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
	opens    int              // open file descriptions of it (fd.go)
	removed  bool             // gone from the tree; freed when no longer open
	mapped   bool             // its contents were mapped (Mapping.data holds them)
}

// device is what a device file does on read and write.
type device interface {
	read(k *Kernel, b []byte) (int, error)
	write(b []byte) (int, error)
}

// fileSystem is the tree the program's paths resolve in. Its nodes and
// their contents are charged to the program's budget (budget.go).
type fileSystem struct {
	root    *node
	nextIno uint64
	budget  *budget
}

// Bounds on the host files a program is given, and on the directories
// leading to them.
const (
	maxFiles     = 4096
	maxPathDepth = 64
)

func newFileSystem(b *budget) *fileSystem {
	fs := &fileSystem{budget: b}
	fs.root, _ = fs.newNode(true, 0o755) // the first node always fits
	return fs
}

// newNode makes a file or directory, charged until it is freed.
func (fs *fileSystem) newNode(dir bool, mode uint32) (*node, error) {
	if err := fs.budget.charge(fsNodes, 1); err != nil {
		return nil, err
	}
	fs.nextIno++
	n := &node{ino: fs.nextIno, dir: dir, mode: mode}
	if dir {
		n.children = map[string]*node{}
	}
	return n, nil
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
			var err error
			if next, err = fs.newNode(true, 0o755); err != nil {
				return nil, fmt.Errorf("%s: more than %d files and directories", p, maxNodes)
			}
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
	dir, name := path.Split(clean(p))
	d, err := fs.mkdirAll(dir)
	if err != nil {
		return nil, err
	}
	if _, ok := d.children[name]; ok {
		return nil, fmt.Errorf("%s is given twice", p)
	}
	if err := fs.budget.charge(fileBytes, int64(len(data))); err != nil {
		return nil, fmt.Errorf("the program's files take more than %d bytes", maxFileBytes)
	}
	n, err := fs.newNode(false, mode)
	if err != nil {
		fs.budget.release(fileBytes, int64(len(data)))
		return nil, fmt.Errorf("more than %d files and directories", maxNodes)
	}
	n.data = data
	d.children[name] = n
	return n, nil
}

// shrinkSlack is how much capacity past its end a file's contents may
// keep when they shrink before they move to an array that fits.
const shrinkSlack = 64 << 10

// resize makes n's contents size bytes long, zeros past the old end,
// charging or releasing the difference (ENOSPC past the budget).
// Contents that outgrow their array move to one with a quarter of
// headroom, copied once: growing never holds a zeroed temporary beside
// them, and a file of the whole budget holds at most 1.25 times it.
func (k *Kernel) resize(n *node, size int64) error {
	old := int64(len(n.data))
	if size > old {
		if err := k.budget.charge(fileBytes, size-old); err != nil {
			return err
		}
	} else {
		k.budget.release(fileBytes, old-size)
	}
	switch {
	case size > int64(cap(n.data)):
		grown := make([]byte, size, size+max(size/4, 64))
		copy(grown, n.data)
		k.moveContents(n, grown)
	case size >= old:
		n.data = n.data[:size]
		clear(n.data[old:]) // what a shrink left past the end
	case int64(cap(n.data))-size > shrinkSlack:
		k.moveContents(n, bytes.Clone(n.data[:size]))
	default:
		n.data = n.data[:size]
	}
	return nil
}

// moveContents gives n new contents, and the mappings that held its old
// ones the new: a mapping names the file it maps, whose contents those
// are now (a probe resolves in them), and the old array is freed rather
// than held outside the budget.
func (k *Kernel) moveContents(n *node, data []byte) {
	old := n.data
	n.data = data
	if n.mapped && cap(old) > 0 {
		for p := range k.processes() {
			p.as.MoveData(old, data)
		}
	}
}

// unlinked is told that n left its directory (unlink, rmdir, a rename
// over it): it is freed now, or when its last open file closes.
func (k *Kernel) unlinked(n *node) {
	n.removed = true
	if n.opens == 0 {
		k.free(n)
	}
}

// closed is told that an open file of n closed.
func (k *Kernel) closed(n *node) {
	n.opens--
	if n.removed && n.opens == 0 {
		k.free(n)
	}
}

// free releases a node no one can reach any more, and its contents.
func (k *Kernel) free(n *node) {
	if !n.dir && n.dev == nil {
		k.budget.release(fileBytes, int64(len(n.data)))
		k.moveContents(n, nil)
	}
	k.budget.release(fsNodes, 1)
}

// addHost reads f.Host into the tree at f.Guest. A recording (or a live
// run) reads the file the user named and fills in its size and mode;
// Kernel.Program takes the hash. A replay (recorded) never skips the
// check: the file must be the one recorded, by size and hash, whether it
// comes packed in the tape or from the host.
func (fs *fileSystem) addHost(f *File, recorded bool) error {
	if recorded && (f.Size < 0 || f.Size > maxFileBytes-fs.budget[fileBytes]) {
		return fmt.Errorf("%s: the program's files would take more than %d bytes", f.Guest, maxFileBytes)
	}
	var (
		data []byte
		mode = f.Mode
	)
	switch {
	case recorded && f.Data != nil:
		data = f.Data
		if int64(len(data)) != f.Size || sha256.Sum256(data) != f.SHA256 {
			return fmt.Errorf("the packed file %s is not the file recorded (%d bytes; recorded %d bytes, sha256 %x…)", f.Guest, len(data), f.Size, f.SHA256[:6])
		}
	case recorded:
		var host os.FileMode
		var err error
		if data, host, err = readRecorded(f); err != nil {
			return err
		}
		if mode == 0 { // a tape from before modes were kept
			mode = modeOf(host)
		}
	default:
		data = f.Data
		if data == nil {
			var err error
			if data, err = userfile.ReadFile(f.Host, maxFileBytes-fs.budget[fileBytes], "file"); err != nil {
				return err
			}
		}
		mode = 0o644
		if st, err := os.Stat(f.Host); err == nil {
			mode = modeOf(st.Mode())
		}
		// A recording's hash is taken when it asks (Kernel.Program): a
		// live run never needs it.
		f.Size, f.Mode = int64(len(data)), mode
	}
	if mode == 0 {
		mode = 0o644 // a file packed before modes were kept
	}
	f.Data = nil // the tree holds the contents
	_, err := fs.add(f.Guest, data, mode)
	return err
}

// modeOf is the permission bits the program sees for a host file of mode
// m (File.Mode).
func modeOf(m os.FileMode) uint32 {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

// pseudoFileSystems are the file systems whose files' sizes say nothing
// of what reading them returns, and whose contents are the host's state
// (a process's environment, the kernel's): nothing a tape can name by
// content. statfs(2) f_type values.
var pseudoFileSystems = map[int64]string{
	unix.PROC_SUPER_MAGIC:    "procfs",
	unix.SYSFS_MAGIC:         "sysfs",
	unix.DEBUGFS_MAGIC:       "debugfs",
	unix.TRACEFS_MAGIC:       "tracefs",
	unix.SECURITYFS_MAGIC:    "securityfs",
	unix.CGROUP_SUPER_MAGIC:  "cgroupfs",
	unix.CGROUP2_SUPER_MAGIC: "cgroup2fs",
}

// readRecorded reads the host file a replay names only if it can be the
// one recorded: a regular file (no FIFO or device: userfile.Open) not on a
// pseudo file system, of the recorded size (no byte more is read), with
// the recorded hash. A forged tape names any path it likes: whatever is
// not the recorded file is refused before its bytes reach the program,
// and without saying what they are.
func readRecorded(f *File) ([]byte, os.FileMode, error) {
	// Not even opened unless it is a regular file: opening a device can
	// act on it (a tape drive rewinds).
	st, err := os.Stat(f.Host)
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s, recorded as %s, is not a regular file", f.Host, f.Guest)
	}
	file, st, err := userfile.Open(f.Host) // the file opened, checked again
	if err != nil {
		return nil, 0, err
	}
	defer file.Close()
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(int(file.Fd()), &sfs); err != nil {
		return nil, 0, &fs.PathError{Op: "statfs", Path: f.Host, Err: err}
	}
	if name, ok := pseudoFileSystems[int64(sfs.Type)]; ok {
		return nil, 0, fmt.Errorf("%s, recorded as %s, is on %s: not a file a tape can name by its contents", f.Host, f.Guest, name)
	}
	notRecorded := func(found string) error {
		return fmt.Errorf("%s is not the file recorded as %s (%s; recorded %d bytes, sha256 %x…)", f.Host, f.Guest, found, f.Size, f.SHA256[:6])
	}
	if st.Size() != f.Size {
		return nil, 0, notRecorded(fmt.Sprintf("%d bytes", st.Size()))
	}
	data := make([]byte, f.Size)
	if _, err := io.ReadFull(file, data); err != nil {
		return nil, 0, notRecorded(fmt.Sprintf("reading it: %v", err))
	}
	if n, _ := file.Read(make([]byte, 1)); n != 0 {
		return nil, 0, notRecorded("it grew while it was read")
	}
	if sha256.Sum256(data) != f.SHA256 {
		return nil, 0, notRecorded(fmt.Sprintf("%d bytes of other contents", f.Size))
	}
	return data, st.Mode(), nil
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
	err = walkFiles(abs, func(p, rel string) error {
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			return nil // not a regular file: not something a program reads whole
		}
		if len(out) >= maxFiles {
			return fmt.Errorf("%s holds more than %d files", host, maxFiles)
		}
		out = append(out, File{Guest: clean(path.Join(guest, filepath.ToSlash(rel))), Host: p})
		return nil
	})
	return out, err
}

// walkFiles calls fn with the path, and the path relative to abs, of
// every entry below the directory abs that is not a directory (Mount,
// MountRoot). An unreadable entry below abs is skipped: not the
// program's to see.
func walkFiles(abs string, fn func(p, rel string) error) error {
	return filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == abs {
				return err
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(abs, p)
		if err != nil {
			return err
		}
		return fn(p, rel)
	})
}
