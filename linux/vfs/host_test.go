package vfs

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// dirHost is a Host over a real directory of this machine's, whose
// contents it keeps, as a replay keeps a packed file's: every Read
// returns the same bytes, held by the caller too.
type dirHost struct {
	held map[string][]byte
}

func (h *dirHost) Stat(p string) (Attrs, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return Attrs{}, err
	}
	return Attrs{Mode: st.Mode, Size: st.Size}, nil
}

func (h *dirHost) List(string) ([]HostEntry, error) { return nil, nil }

func (h *dirHost) Read(p string) ([]byte, *[32]byte, error) {
	data, ok := h.held[p]
	if !ok {
		var err error
		if data, err = os.ReadFile(p); err != nil {
			return nil, nil, err
		}
		h.held[p] = data
	}
	sum := sha256.Sum256(data)
	return data, &sum, nil
}

func (h *dirHost) Reload(p string, _ int64, _ [32]byte) ([]byte, error) {
	data, _, err := h.Read(p)
	return data, err
}

// A host file's contents, read when opened, may be held elsewhere too (a
// replay's packed copy, the executable's image that every segment's
// kernel shares): a write through the tree copies them first.
func TestHostContentsCopiedOnWrite(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("original"), 0o644))
	h := &dirHost{held: map[string][]byte{}}
	fs := New(&Budget{}, nil)
	fs.SetHost(h)
	fs.MountHost(dir)
	n, err := fs.Lookup("/f")
	require.NoError(t, err)
	require.EqualValues(t, 8, n.Size(), "the host's size, before the contents are read")
	require.NoError(t, fs.Load(n))
	f := fs.Open(n, "/f", unix.O_RDWR)
	_, err = f.Write([]byte("X"), 0)
	require.NoError(t, err)
	require.Equal(t, "Xriginal", string(n.Contents()))
	require.Equal(t, "original", string(h.held[filepath.Join(dir, "f")]), "the other holder's bytes")
}

// unhashedHost reads as dirHost does but takes no hash, as a live run's
// reader: the tree takes it when it needs it.
type unhashedHost struct{ dirHost }

func (h *unhashedHost) Read(p string) ([]byte, *[32]byte, error) {
	data, _, err := h.dirHost.Read(p)
	return data, nil, err
}

// A host file read without its hash gets it from the contents it was
// read with when a state is saved — of an untouched file, as it is; of
// one the program wrote since, as it was before the write, taken when
// the write replaced them — so that a restore finds the host's file.
func TestHostContentsHashedWhenNeeded(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"kept", "written"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("original "+name), 0o644))
	}
	h := &unhashedHost{dirHost{held: map[string][]byte{}}}
	fs := New(&Budget{}, nil)
	fs.SetHost(h)
	fs.MountHost(dir)
	nodes := map[string]*Node{}
	for _, name := range []string{"kept", "written"} {
		n, err := fs.Lookup("/" + name)
		require.NoError(t, err)
		require.NoError(t, fs.Load(n))
		require.Nil(t, n.host.sum, "no hash taken yet")
		nodes[name] = n
	}
	f := fs.Open(nodes["written"], "/written", unix.O_RDWR)
	_, err := f.Write([]byte("X"), 0)
	require.NoError(t, err)
	require.NotNil(t, nodes["written"].host.sum, "taken before the contents changed")
	require.Nil(t, nodes["kept"].host.sum)

	sv := NewSaver(fs.Root())
	for name, n := range nodes {
		saved := sv.Nodes[sv.Node(n)].Host
		require.Equal(t, sha256.Sum256([]byte("original "+name)), saved.SHA256, name)
	}
	require.Equal(t, "Xriginal written", string(nodes["written"].Contents()))
}
