package vfs

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// wideHost is a host whose root holds directories d0, d1, … each of
// files f0 … f999 (empty), counting the listings it is asked for.
type wideHost struct{ lists map[string]int }

func (h *wideHost) Stat(p string) (Attrs, error) {
	if strings.Count(p, "/") == 1 {
		return Attrs{Mode: unix.S_IFDIR | 0o755, UID: 1000, GID: 1000}, nil
	}
	return Attrs{Mode: unix.S_IFREG | 0o644}, nil
}

func (h *wideHost) List(p string) ([]HostEntry, error) {
	h.lists[p]++
	if p == "/" {
		return nil, nil
	}
	entries := make([]HostEntry, 1000)
	for i := range entries {
		entries[i] = HostEntry{Name: fmt.Sprintf("f%d", i), Attrs: Attrs{Mode: unix.S_IFREG | 0o644}}
	}
	return entries, nil
}

func (h *wideHost) Read(string) ([]byte, *[32]byte, error)         { return nil, nil, nil }
func (h *wideHost) Reload(string, int64, [32]byte) ([]byte, error) { return nil, nil }

// A walk over more of the host than the tree may hold (find /usr) goes
// on: between calls the tree forgets the host directories learned first
// that the program left as they were and holds nothing in — never one it
// changed, one with a file open, a working directory — and asks the host
// again when the program looks again.
func TestForgetTheHost(t *testing.T) {
	h := &wideHost{lists: map[string]int{}}
	fs := New(&Budget{}, nil)
	fs.SetHost(h)
	fs.MountHost("/")
	fs.SetOwner(1000, 1000)
	lookup := func(p string) *Node {
		t.Helper()
		n, err := fs.Lookup(p)
		require.NoError(t, err)
		return n
	}
	list := func(p string) {
		t.Helper()
		names, err := fs.List(lookup(p))
		require.NoError(t, err)
		require.Len(t, names, 1000)
	}

	// d0: the program makes a file in it; d1: a file of it is open; d2:
	// a working directory's file.
	list("/d0")
	d0 := lookup("/d0")
	_, err := fs.Create(Entry{Dir: d0, Name: "mine"}, 0o644)
	require.NoError(t, err)
	list("/d1")
	open := fs.Open(lookup("/d1/f7"), "/d1/f7", unix.O_RDONLY)
	pinned := func(*Node) bool { return false }

	for i := 3; i < 200; i++ {
		fs.Forget(pinned)
		list(fmt.Sprintf("/d%d", i))
		require.LessOrEqual(t, fs.budget[Nodes], int64(MaxNodes), "d%d", i)
	}
	fs.Forget(pinned)
	require.LessOrEqual(t, fs.budget[Nodes], int64(forgetHigh))
	require.Len(t, d0.children, 1001, "what the program changed is never forgotten")
	require.Len(t, lookup("/d1").children, 1000, "nor a directory with a file open")
	require.Equal(t, 1, h.lists["/d3"])
	require.Empty(t, lookup("/d3").children, "the first learned is forgotten")
	list("/d3")
	require.Equal(t, 2, h.lists["/d3"], "and asked of the host again")
	open.Release()
}

// A directory the kernel holds (a working directory), or one just
// learned, is not freed with its parent's entries.
func TestForgetKeepsPinned(t *testing.T) {
	fs := New(&Budget{}, nil)
	fs.SetHost(&wideHost{lists: map[string]int{}})
	fs.MountHost("/")
	d1, err := fs.Lookup("/d1")
	require.NoError(t, err)
	none := func(*Node) bool { return false }
	require.False(t, fs.mayForget(fs.root, none), "d1 was just learned: a walk may be about to open it")
	fs.nextIno += forgetRecent
	require.True(t, fs.mayForget(fs.root, none))
	require.False(t, fs.mayForget(fs.root, func(n *Node) bool { return n == d1 }))
}
