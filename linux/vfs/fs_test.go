package vfs

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// tree is a small file system: /etc/passwd, /bin/sh, /tmp.
func tree(t *testing.T) (*FileSystem, *Budget) {
	t.Helper()
	b := &Budget{}
	fs := New(b, nil)
	_, err := fs.Add("/etc/passwd", []byte("root\n"), 0o644)
	require.NoError(t, err)
	_, err = fs.Add("/bin/sh", []byte("\x7fELF"), 0o755)
	require.NoError(t, err)
	_, err = fs.MkdirAll("/tmp")
	require.NoError(t, err)
	return fs, b
}

func TestLookup(t *testing.T) {
	fs, _ := tree(t)
	passwd, err := fs.Lookup("/etc/passwd")
	require.NoError(t, err)
	for _, tc := range []struct {
		path string
		want *Node
		err  error
	}{
		{"/etc/passwd", passwd, nil},
		{"etc/passwd", passwd, nil},           // relative: from the root
		{"/tmp/../etc/./passwd", passwd, nil}, // ".." walks back
		{"/../../etc/passwd", passwd, nil},    // ".." at the root stays there
		{"/etc/passwd/..", nil, unix.ENOTDIR}, // not cleaned first
		{"/etc/passwd/", nil, unix.ENOTDIR},   // a trailing slash asks for a directory
		{"/etc/shadow", nil, unix.ENOENT},     // missing
		{"/nowhere/passwd", nil, unix.ENOENT}, // a missing directory
		{"", nil, unix.ENOENT},                // empty
		{"/" + string(make([]byte, 256)), nil, unix.ENAMETOOLONG},
	} {
		n, err := fs.Lookup(tc.path)
		require.Equal(t, tc.err, err, tc.path)
		if tc.err == nil {
			require.Same(t, tc.want, n, tc.path)
		}
	}
	root, err := fs.Lookup("/..")
	require.NoError(t, err)
	require.Same(t, fs.Root(), root)
}

func TestParent(t *testing.T) {
	fs, _ := tree(t)
	etc, _ := fs.Lookup("/etc")
	e, err := fs.Parent("/etc/new/")
	require.NoError(t, err)
	require.Equal(t, Entry{Dir: etc, Name: "new", Slash: true}, e)
	require.True(t, e.Named())
	_, err = fs.Parent("/etc/passwd/x")
	require.Equal(t, unix.ENOTDIR, err)
	e, err = fs.Parent("/")
	require.NoError(t, err)
	require.False(t, e.Named(), "the root is no entry")
}

// Removing, renaming and making entries, with Linux's errors, and what a
// removed file still open holds.
func TestEntries(t *testing.T) {
	fs, b := tree(t)
	parent := func(p string) Entry {
		e, err := fs.Parent(p)
		require.NoError(t, err)
		return e
	}
	require.Equal(t, unix.EEXIST, fs.Mkdir(parent("/tmp"), 0o755))
	require.NoError(t, fs.Mkdir(parent("/tmp/d"), 0o700))
	require.Equal(t, unix.ENOTEMPTY, fs.Remove(parent("/tmp"), true))
	require.Equal(t, unix.EISDIR, fs.Remove(parent("/tmp/d"), false))
	require.Equal(t, unix.ENOTDIR, fs.Remove(parent("/etc/passwd"), true))
	require.Equal(t, unix.EINVAL, fs.Rename(parent("/tmp"), parent("/tmp/d/x")), "a directory into itself")
	require.Equal(t, unix.EISDIR, fs.Rename(parent("/etc/passwd"), parent("/tmp/d")))

	nodes, bytes := b[Nodes], b[FileBytes]
	passwd, _ := fs.Lookup("/etc/passwd")
	f := fs.Open(passwd, "/etc/passwd", unix.O_RDONLY)
	require.NoError(t, fs.Rename(parent("/bin/sh"), parent("/etc/passwd")), "a file renamed over one open")
	require.Equal(t, nodes, b[Nodes], "the replaced file is still open")
	buf := make([]byte, 16)
	n, err := f.Read(buf, 0)
	require.NoError(t, err)
	require.Equal(t, "root\n", string(buf[:n]), "an open file keeps its contents")
	f.Release()
	require.Equal(t, nodes-1, b[Nodes], "freed with its last open file")
	require.Equal(t, bytes-5, b[FileBytes])
	sh, err := fs.Lookup("/etc/passwd")
	require.NoError(t, err)
	require.Equal(t, "\x7fELF", string(sh.Contents()))
}

// Writing grows a file within the budget; past it, ENOSPC.
func TestWriteCharges(t *testing.T) {
	fs, b := tree(t)
	n, err := fs.Add("/tmp/f", nil, 0o644)
	require.NoError(t, err)
	f := fs.Open(n, "/tmp/f", unix.O_RDWR)
	before := b[FileBytes]
	w, err := f.Write([]byte("abc"), 10)
	require.NoError(t, err)
	require.Equal(t, 3, w)
	require.Equal(t, before+13, b[FileBytes])
	require.Equal(t, "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00abc", string(n.Contents()))
	require.True(t, n.Written)
	b[FileBytes] = MaxFileBytes
	_, err = f.Write([]byte("x"), 13)
	require.Equal(t, unix.ENOSPC, err)
	off, err := f.Lseek(-1, unix.SEEK_END)
	require.NoError(t, err)
	require.EqualValues(t, 12, off)
	_, err = f.Lseek(0, unix.SEEK_HOLE+1)
	require.Equal(t, unix.EINVAL, err)
}

// A mapped file's contents that move are handed to the mappings.
func TestRemap(t *testing.T) {
	var moved [][2][]byte
	fs := New(&Budget{}, func(old, new []byte) { moved = append(moved, [2][]byte{old, new}) })
	n, err := fs.Add("/f", []byte("abc"), 0o644)
	require.NoError(t, err)
	require.NoError(t, fs.Resize(n, 100))
	require.Empty(t, moved, "not mapped")
	n.Mapped = true
	require.NoError(t, fs.Resize(n, 1000))
	require.Len(t, moved, 1)
	require.Equal(t, n.Contents(), moved[0][1])
}

// Contents shared with another holder (a tape's image, another kernel's
// tree) are copied before a write or a resize changes them; the other
// holder never sees the change, and a mapping follows the copy.
func TestSharedContentsCopiedOnWrite(t *testing.T) {
	image := make([]byte, 8, 16) // room to grow in place
	copy(image, "original")
	var moved int
	fs := New(&Budget{}, func(old, new []byte) { moved++ })
	n, err := fs.Add("/f", image, 0o644)
	require.NoError(t, err)
	n.Share()
	n.Mapped = true
	f := fs.Open(n, "/f", unix.O_RDWR)
	_, err = f.Write([]byte("X"), 0)
	require.NoError(t, err)
	require.Equal(t, "Xriginal", string(n.Contents()))
	require.Equal(t, "original", string(image), "the other holder's bytes")
	require.Equal(t, 1, moved, "the mapping was handed the copy")
	_, err = f.Write([]byte("Y"), 1)
	require.NoError(t, err)
	require.Equal(t, 1, moved, "copied once")

	m, err := fs.Add("/g", image[:4], 0o644)
	require.NoError(t, err)
	m.Share()
	require.NoError(t, fs.Resize(m, 8)) // within the shared array's capacity
	require.Equal(t, "orig\x00\x00\x00\x00", string(m.Contents()))
	require.Equal(t, "original", string(image), "a resize cleared the other holder's bytes")
}
