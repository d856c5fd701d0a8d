package tape

import (
	"encoding/hex"
	"fmt"
	"math/bits"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/reprise-vm/reprise/abi"
)

// KindFile is an observation of the host's files: Fact (since version 5).
// A Linux program sees the host's filesystem lazily: the first time the
// personality looks up a name, lists a directory or reads a file's
// contents on the host, what the host answered is an input, logged where
// the guest asked (like entropy), and a replay takes it from the tape
// instead of asking the host.
const KindFile Kind = 8

// FileOp is what an observation asked the host.
type FileOp uint8

const (
	FileStat FileOp = 1 // lstat of Path: Stat (a symbolic link's target in Stat.Link), or Errno
	FileList FileOp = 2 // the entries of the directory Path, each with its lstat: Entries, or Errno
	FileRead FileOp = 3 // the contents of Path: Size and SHA256 (the bytes themselves are the host's, or packed), or Errno
)

var fileOpNames = [...]string{FileStat: "stat", FileList: "list", FileRead: "read"}

func (o FileOp) String() string {
	if o.known() {
		return fileOpNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

func (o FileOp) known() bool { return o >= FileStat && o <= FileRead }

// Stat is what lstat said of a host file, as the program sees it.
type Stat struct {
	Mode                uint32 // st_mode: the type (S_IFREG, S_IFDIR, S_IFLNK, S_IFCHR, S_IFBLK, S_IFIFO, S_IFSOCK) and permission bits (07777)
	UID, GID            uint32
	Nlink               uint32
	Size                int64  // ≥ 0
	Atime, Mtime, Ctime int64  // ns since the Unix epoch (may be negative)
	Link                string // a symbolic link's target: non-empty exactly when the type is S_IFLNK, at most MaxLinkBytes, no NUL
}

// DirEntry is one entry of a listed directory.
type DirEntry struct {
	Name string // a name as getdents gives: 1 to MaxNameBytes bytes, no '/' or NUL, not "." or ".."
	Stat Stat
}

// FileFact is one observation of the host's files and the host's answer.
// Only the fields of its Op's answer are set, and none when the host
// refused (Errno): Append refuses a fact that sets another, so what a
// reader returns is exactly what was appended (an empty listing reads
// back as nil Entries).
type FileFact struct {
	Op      FileOp
	Path    string     // the host path asked about: absolute, 1 to abi.LinuxMaxPath bytes, no NUL
	Errno   uint16     // the host's error (1 to 4095) when it did not answer; then every answer field is zero
	Stat    Stat       // FileStat only
	Entries []DirEntry // FileList only: sorted by name (bytewise), no name twice, at most MaxDirEntries
	// Order is FileList's order as the host listed the entries (getdents
	// order, which find and tar -c print in): indices into Entries, each
	// once; empty, name order (a tape before version 7).
	Order  []uint32
	Size   int64    // FileRead only, ≥ 0
	SHA256 [32]byte // FileRead only, never zero (an empty file's is e3b0c442…)
}

// Limits on what a fact holds.
const (
	MaxLinkBytes  = 4095  // a symbolic link's target (PATH_MAX less its NUL)
	MaxNameBytes  = 255   // a directory entry's name (NAME_MAX)
	MaxDirEntries = 65536 // entries of one listed directory
	// MaxFactBytes bounds one fact's encoding: an event must fit a chunk
	// (16 MiB), with room for the events pending before it. A directory
	// whose listing is larger cannot be logged as one fact.
	MaxFactBytes = 8 << 20

	maxErrno = 4095 // the kernel's MAX_ERRNO
)

// File types in st_mode: Linux's values, which are the tape's whatever
// the host.
const (
	sIFMT   = 0o170000
	sIFSOCK = 0o140000
	sIFLNK  = 0o120000
	sIFREG  = 0o100000
	sIFBLK  = 0o060000
	sIFDIR  = 0o040000
	sIFCHR  = 0o020000
	sIFIFO  = 0o010000
)

var typeNames = map[uint32]string{sIFSOCK: "socket", sIFLNK: "symlink", sIFREG: "regular", sIFBLK: "block device",
	sIFDIR: "directory", sIFCHR: "char device", sIFIFO: "fifo"}

// check returns why f cannot be on a tape, or "". Append and the reader
// apply the same rules. Counts are checked before the entries are walked,
// so checking a forged fact costs no more than its bounds.
func (f *FileFact) check() string {
	if !f.Op.known() {
		return fmt.Sprintf("unknown file op %d", uint8(f.Op))
	}
	if why := checkPath(f.Path); why != "" {
		return fmt.Sprintf("%v: %s", f.Op, why)
	}
	switch {
	case f.Errno > maxErrno:
		return fmt.Sprintf("%v %q: errno %d (want 1 to %d)", f.Op, f.Path, f.Errno, maxErrno)
	case f.Errno != 0 && (f.Stat != Stat{} || len(f.Entries) != 0 || f.Size != 0 || f.SHA256 != [32]byte{}):
		return fmt.Sprintf("%v %q: errno %d with an answer (a host that refused answered nothing)", f.Op, f.Path, f.Errno)
	case f.Op != FileStat && f.Stat != Stat{}:
		return fmt.Sprintf("%v %q with a Stat (only stat carries one)", f.Op, f.Path)
	case f.Op != FileList && (len(f.Entries) != 0 || len(f.Order) != 0):
		return fmt.Sprintf("%v %q with Entries (only list carries them)", f.Op, f.Path)
	case f.Op != FileRead && (f.Size != 0 || f.SHA256 != [32]byte{}):
		return fmt.Sprintf("%v %q with a Size or SHA-256 (only read carries them)", f.Op, f.Path)
	case f.Errno != 0:
		return ""
	}
	switch f.Op {
	case FileStat:
		if why := f.Stat.check(); why != "" {
			return fmt.Sprintf("stat %q: %s", f.Path, why)
		}
	case FileList:
		if len(f.Entries) > MaxDirEntries {
			return fmt.Sprintf("list %q: %d entries (at most %d)", f.Path, len(f.Entries), MaxDirEntries)
		}
		for i := range f.Entries {
			e := &f.Entries[i]
			if why := checkName(e.Name); why != "" {
				return fmt.Sprintf("list %q: entry %d: %s", f.Path, i, why)
			}
			// Sorted and unique in one comparison: a replay looks names up
			// by binary search, and a name twice would answer two ways.
			if i > 0 && e.Name <= f.Entries[i-1].Name {
				return fmt.Sprintf("list %q: entry %d %q is not after %q (entries are sorted by name, none twice)", f.Path, i, e.Name, f.Entries[i-1].Name)
			}
			if why := e.Stat.check(); why != "" {
				return fmt.Sprintf("list %q: entry %q: %s", f.Path, e.Name, why)
			}
		}
		if why := checkOrder(f.Order, len(f.Entries)); why != "" {
			return fmt.Sprintf("list %q: %s", f.Path, why)
		}
	case FileRead:
		// A zero hash once meant "not recorded" for a header's files and
		// skipped the check: no hash is zero.
		switch {
		case f.Size < 0:
			return fmt.Sprintf("read %q: size %d", f.Path, f.Size)
		case f.SHA256 == [32]byte{}:
			return fmt.Sprintf("read %q: no SHA-256", f.Path)
		}
	}
	if n := f.encodedLen(); n > MaxFactBytes {
		return fmt.Sprintf("%v %q: %d bytes encoded, more than the %d a fact may take", f.Op, f.Path, n, MaxFactBytes)
	}
	return ""
}

// check returns why s is not what lstat can say, or "".
func (s *Stat) check() string {
	t := s.Mode & sIFMT
	switch {
	case s.Mode&^(sIFMT|0o7777) != 0:
		return fmt.Sprintf("mode %#o has bits past the type and permissions", s.Mode)
	case typeNames[t] == "":
		return fmt.Sprintf("mode %#o has no file type", s.Mode)
	case s.Size < 0:
		return fmt.Sprintf("size %d", s.Size)
	case t == sIFLNK && s.Link == "":
		return "a symbolic link without its target"
	case t != sIFLNK && s.Link != "":
		return fmt.Sprintf("a link target for mode %#o, not a symbolic link", s.Mode)
	case len(s.Link) > MaxLinkBytes:
		return fmt.Sprintf("link target of %d bytes (at most %d)", len(s.Link), MaxLinkBytes)
	case strings.IndexByte(s.Link, 0) >= 0:
		return "link target with a NUL byte"
	}
	return ""
}

// checkName returns why name is not a name getdents gives, or "".
func checkName(name string) string {
	switch {
	case name == "" || len(name) > MaxNameBytes:
		return fmt.Sprintf("a name of %d bytes (want 1 to %d)", len(name), MaxNameBytes)
	case name == "." || name == "..":
		return fmt.Sprintf("the name %q", name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Sprintf("name %q with a '/' or NUL", name)
	}
	return ""
}

// checkPath returns why p is not an absolute path a Linux program can
// name (1 to abi.LinuxMaxPath bytes, no NUL), or "".
func checkPath(p string) string {
	switch {
	case p == "" || len(p) > abi.LinuxMaxPath:
		return fmt.Sprintf("a path of %d bytes (want 1 to %d)", len(p), abi.LinuxMaxPath)
	case p[0] != '/':
		return fmt.Sprintf("path %q is not absolute", p)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Sprintf("path %q has a NUL byte", p)
	}
	return ""
}

// encodedLen is the size of f's encoding (appendFact's), computed
// without encoding it.
func (f *FileFact) encodedLen() int {
	n := 1 + strLen(f.Path) + uvarintLen(uint64(f.Errno))
	if f.Errno != 0 {
		return n
	}
	switch f.Op {
	case FileStat:
		n += f.Stat.encodedLen()
	case FileList:
		n += uvarintLen(uint64(len(f.Entries))) + uvarintLen(uint64(len(f.Order)))
		for i := range f.Entries {
			n += strLen(f.Entries[i].Name) + f.Entries[i].Stat.encodedLen()
		}
		for _, i := range f.Order {
			n += uvarintLen(uint64(i))
		}
	case FileRead:
		n += uvarintLen(uint64(f.Size)) + 32
	}
	return n
}

func (s *Stat) encodedLen() int {
	return uvarintLen(uint64(s.Mode)) + uvarintLen(uint64(s.UID)) + uvarintLen(uint64(s.GID)) +
		uvarintLen(uint64(s.Nlink)) + uvarintLen(uint64(s.Size)) +
		varintLen(s.Atime) + varintLen(s.Mtime) + varintLen(s.Ctime) + strLen(s.Link)
}

// minStatBytes and minEntryBytes are the smallest encoded stat (nine
// one-byte varints, the last the link's length) and directory entry (a
// one-byte name too): a listing's count is checked against them.
const (
	minStatBytes  = 9
	minEntryBytes = 2 + minStatBytes
)

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

func varintLen(x int64) int { return uvarintLen(uint64(x<<1) ^ uint64(x>>63)) }

func strLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

// String renders f on one line: "stat /usr/lib/x: regular 0644 1234
// bytes", "list /usr/lib: 312 entries", "read /usr/bin/python3: 6831736
// bytes sha256 1a2b3c4d5e6f…", "stat /nope: ENOENT".
func (f *FileFact) String() string {
	head := fmt.Sprintf("%v %s: ", f.Op, f.Path)
	if f.Errno != 0 {
		if name := unix.ErrnoName(syscall.Errno(f.Errno)); name != "" {
			return head + name
		}
		return head + fmt.Sprintf("errno %d", f.Errno)
	}
	switch f.Op {
	case FileStat:
		return head + f.Stat.String()
	case FileList:
		return head + plural(len(f.Entries), "entry", "entries")
	case FileRead:
		return head + fmt.Sprintf("%d bytes sha256 %s…", f.Size, hex.EncodeToString(f.SHA256[:6]))
	}
	return strings.TrimSuffix(head, ": ")
}

// String renders s as "regular 0644 1234 bytes", "symlink 0777 -> target".
func (s *Stat) String() string {
	t := typeNames[s.Mode&sIFMT]
	if t == "" {
		t = fmt.Sprintf("type %#o", s.Mode&sIFMT)
	}
	out := fmt.Sprintf("%s %04o %d bytes", t, s.Mode&0o7777, s.Size)
	if s.Link != "" {
		out += " -> " + s.Link
	}
	return out
}

// checkOrder says what keeps order from being a listing order of n
// entries: none, or each index below n once.
func checkOrder(order []uint32, n int) string {
	if len(order) == 0 {
		return ""
	}
	if len(order) != n {
		return fmt.Sprintf("an order of %d entries for %d", len(order), n)
	}
	seen := make([]bool, n)
	for _, i := range order {
		if int(i) >= n || seen[i] {
			return fmt.Sprintf("entry %d twice or out of %d in the order", i, n)
		}
		seen[i] = true
	}
	return ""
}

// Listed are a listing's entries in the order the host listed them.
func (f *FileFact) Listed() []DirEntry {
	if len(f.Order) == 0 {
		return f.Entries
	}
	out := make([]DirEntry, len(f.Order))
	for j, i := range f.Order {
		out[j] = f.Entries[i]
	}
	return out
}
