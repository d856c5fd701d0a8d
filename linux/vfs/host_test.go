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

func (h *dirHost) Read(p string) ([]byte, [32]byte, error) {
	data, ok := h.held[p]
	if !ok {
		var err error
		if data, err = os.ReadFile(p); err != nil {
			return nil, [32]byte{}, err
		}
		h.held[p] = data
	}
	return data, sha256.Sum256(data), nil
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
