package linux

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/host/userfile"
	"github.com/reprise-vm/reprise/linux/vfs"
	"github.com/reprise-vm/reprise/tape"
)

// File is a host file whose contents a tape holds (packed), the tape's
// type: a replay finds the program's reads of it there rather than on the
// host.
type File = tape.File

// Mount is a host file or directory the user placed at a guest path
// (--file HOST:GUEST), the tape's type.
type Mount = tape.Mount

// The tree, open files and descriptors are vfs's.
type (
	node     = vfs.Node
	openFile = vfs.OpenFile
	fdTable  = vfs.FDTable
)

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

// ReadRecorded reads a host file a recording read (a file event), from
// the host, only if it is that file (readRecorded).
func ReadRecorded(f *File) ([]byte, error) { return readRecorded(f) }

// IsELF reports whether the host file p is a regular file that starts
// with the ELF magic; it reads no more of it.
func IsELF(p string) bool {
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == "\x7fELF"
}

// readRecorded reads the host file a replay names only if it can be the
// one recorded: a regular file (no FIFO or device: userfile.Open) not on a
// pseudo file system, of the recorded size (no byte more is read), with
// the recorded hash. A forged tape names any path it likes: whatever is
// not the recorded file is refused before its bytes reach the program,
// and without saying what they are.
func readRecorded(f *File) ([]byte, error) {
	// Not even opened unless it is a regular file: opening a device can
	// act on it (a tape drive rewinds).
	st, err := os.Stat(f.Host)
	if err != nil {
		return nil, fmt.Errorf("the program read %s when recorded, which is not packed in the tape: %w", f.Host, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s, which the program read when recorded, is not a regular file", f.Host)
	}
	file, st, err := userfile.Open(f.Host) // the file opened, checked again
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(int(file.Fd()), &sfs); err != nil {
		return nil, &fs.PathError{Op: "statfs", Path: f.Host, Err: err}
	}
	if name, ok := pseudoFileSystems[int64(sfs.Type)]; ok {
		return nil, fmt.Errorf("%s is on %s: not a file a tape can name by its contents", f.Host, name)
	}
	notRecorded := func(found string) error {
		return fmt.Errorf("%s is not the file the program read when recorded (%s; recorded %d bytes, sha256 %x…): it changed since; pack the tape where it was recorded (reprise pack)", f.Host, found, f.Size, f.SHA256[:6])
	}
	if st.Size() != f.Size {
		return nil, notRecorded(fmt.Sprintf("%d bytes", st.Size()))
	}
	data := make([]byte, f.Size)
	if _, err := io.ReadFull(file, data); err != nil {
		return nil, notRecorded(fmt.Sprintf("reading it: %v", err))
	}
	if n, _ := file.Read(make([]byte, 1)); n != 0 {
		return nil, notRecorded("it grew while it was read")
	}
	if sha256.Sum256(data) != f.SHA256 {
		return nil, notRecorded(fmt.Sprintf("%d bytes of other contents", f.Size))
	}
	return data, nil
}

// remap gives the mappings that held a file's old contents the new: a
// mapping names the file it maps, whose contents those are now (a probe
// resolves in them), and the old array is freed rather than held outside
// the budget (vfs.Remap).
func (k *Kernel) remap(old, data []byte) {
	for _, p := range k.liveProcesses() {
		p.as.MoveData(old, data)
	}
}
