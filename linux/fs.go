package linux

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/host/userfile"
	"github.com/reprise-vm/reprise/linux/vfs"
	"github.com/reprise-vm/reprise/tape"
)

// File is a host file the program sees at a guest path: the tape's type,
// which a recording keeps as it is. Its contents are an input, named by
// their hash like a disk's base image: a recording keeps Size and SHA256,
// and a replay reads the file again, or takes its packed Data, and
// refuses it if they differ.
type File = tape.File

// The tree, open files and descriptors are vfs's.
type (
	node     = vfs.Node
	openFile = vfs.OpenFile
	fdTable  = vfs.FDTable
)

// maxFiles bounds the host files a program is given.
const maxFiles = 4096

// addHost reads f.Host into the tree at f.Guest. A recording (or a live
// run) reads the file the user named and fills in its size and mode;
// Kernel.Program takes the hash. A replay (recorded) never skips the
// check: the file must be the one recorded, by size and hash, whether it
// comes packed in the tape or from the host.
func addHost(fs *vfs.FileSystem, b *budget, f *File, recorded bool) error {
	if recorded && (f.Size < 0 || f.Size > maxFileBytes-b[fileBytes]) {
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
			if data, err = userfile.ReadFile(f.Host, maxFileBytes-b[fileBytes], "file"); err != nil {
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
	_, err := fs.Add(f.Guest, data, mode)
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

// remap gives the mappings that held a file's old contents the new: a
// mapping names the file it maps, whose contents those are now (a probe
// resolves in them), and the old array is freed rather than held outside
// the budget (vfs.Remap).
func (k *Kernel) remap(old, data []byte) {
	for p := range k.processes() {
		p.as.MoveData(old, data)
	}
}

// Contents are the bytes of the file at the guest path p, as the program
// started with them (before it runs): what packing a tape stores.
func (k *Kernel) Contents(p string) ([]byte, bool) {
	n, err := k.fs.Lookup(p)
	if err != nil || !n.IsRegular() {
		return nil, false
	}
	return n.Contents(), true
}

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
		return []File{{Guest: vfs.Clean(guest), Host: abs}}, nil
	}
	var out []File
	err = walkFiles(abs, func(p, rel string) error {
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			return nil // not a regular file: not something a program reads whole
		}
		if len(out) >= maxFiles {
			return fmt.Errorf("%s holds more than %d files", host, maxFiles)
		}
		out = append(out, File{Guest: vfs.Clean(path.Join(guest, filepath.ToSlash(rel))), Host: p})
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
