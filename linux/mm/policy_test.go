package mm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// With Policy.PresetAccessed every leaf entry the VMM makes carries the accessed
// bit, and the dirty bit where writable — mapped, faulted in, copied on a
// write, made read-only — so a shadowing KVM has nothing to set in them;
// without it (a replay of personality 11's tapes) it carries neither, as
// before, and the CPU sets them.
func TestPolicyPresetAccessed(t *testing.T) {
	for _, preset := range []bool{false, true} {
		as, fr := newSpace(t)
		fr.SetPolicy(Policy{PresetAccessed: preset})
		leaf := func(va uint64) uint64 {
			t.Helper()
			pte, err := as.Leaf(va)
			require.NoError(t, err)
			require.NotZero(t, pte&ptePresent, "%#x", va)
			return pte & (pteAccessed | pteDirty | pteWrite)
		}
		want := func(write bool) uint64 {
			switch {
			case !preset && write:
				return pteWrite
			case !preset:
				return 0
			case write:
				return pteWrite | pteAccessed | pteDirty
			}
			return pteAccessed
		}
		require.NoError(t, as.Map(user, user+2*page, rw))
		require.NoError(t, as.Map(user+4*page, user+5*page, ProtRead))
		require.NoError(t, as.MapLazy(user+8*page, user+10*page, rw))
		faulted, err := as.FaultIn(user + 9*page)
		require.NoError(t, err)
		require.True(t, faulted)
		require.Equal(t, want(true), leaf(user), "preset %v: mapped writable", preset)
		require.Equal(t, want(false), leaf(user+4*page), "preset %v: mapped read-only", preset)
		require.Equal(t, want(true), leaf(user+9*page), "preset %v: faulted in", preset)

		child, _, err := as.Clone()
		require.NoError(t, err)
		require.NoError(t, child.Write(user, []byte("x")))
		pte, err := child.Leaf(user)
		require.NoError(t, err)
		require.Equal(t, want(true), pte&(pteAccessed|pteDirty|pteWrite), "preset %v: copied on a write", preset)
		require.NoError(t, as.Protect(user, user+page, ProtRead))
		require.Equal(t, want(false), leaf(user), "preset %v: made read-only", preset)
	}
}

// A fork of a space with at most Policy.CopyAtFork writable private pages
// copies them for the child at once: the parent's entries and root stay
// as they were (nothing for KVM's shadows to miss), neither side is
// copy-on-write, and each sees only its own writes; read-only and shared
// pages are shared as before. One more page and the fork is
// copy-on-write, as under the zero policy.
func TestPolicyCopyAtFork(t *testing.T) {
	as, fr := newSpace(t)
	fr.SetPolicy(Policy{CopyAtFork: 3})
	o := fr.NewObject(nil, func() {})
	require.NoError(t, as.MapShared(user, user+page, rw, o, 0))
	require.NoError(t, as.Map(user+page, user+3*page, rw))
	require.NoError(t, as.Map(user+4*page, user+5*page, ProtRead))
	require.NoError(t, as.MapLazy(user+8*page, user+16*page, rw))
	_, err := as.FaultIn(user + 9*page)
	require.NoError(t, err)
	require.NoError(t, as.Write(user+page, []byte("parent")))
	as.Published()
	root := as.CR3()
	entries := map[uint64]uint64{}
	for _, va := range []uint64{user, user + page, user + 2*page, user + 4*page, user + 9*page} {
		entries[va], err = as.Leaf(va)
		require.NoError(t, err)
	}

	child, cow, err := as.Clone()
	require.NoError(t, err)
	require.False(t, cow, "three writable private pages: copied")
	require.Equal(t, root, as.CR3(), "the parent's tables are untouched")
	for va, pte := range entries {
		now, err := as.Leaf(va)
		require.NoError(t, err)
		require.Equal(t, pte, now, "the parent's entry at %#x", va)
		require.False(t, as.COW(va) || child.COW(va), "%#x", va)
		pa, _ := as.Frame(va)
		cpa, _ := child.Frame(va)
		if va == user || va == user+4*page {
			require.Equal(t, pa, cpa, "%#x: shared or read-only, one frame", va)
			continue
		}
		require.NotEqual(t, pa, cpa, "%#x: the child's own copy", va)
		cpte, err := child.Leaf(va)
		require.NoError(t, err)
		require.NotZero(t, cpte&pteWrite, "%#x: writable in the child", va)
	}
	got := make([]byte, 6)
	require.NoError(t, child.Read(user+page, got))
	require.Equal(t, "parent", string(got), "copied with its contents")
	require.NoError(t, child.Write(user+page, []byte("child!")))
	require.NoError(t, as.Read(user+page, got))
	require.Equal(t, "parent", string(got), "the child's write is its own")
	_, err = child.FaultIn(user + 10*page)
	require.NoError(t, err)
	child.Release()

	require.NoError(t, as.Map(user+3*page, user+4*page, rw))
	child, cow, err = as.Clone()
	require.NoError(t, err)
	require.True(t, cow, "four writable private pages: copy-on-write")
	require.True(t, as.COW(user+page))
	require.True(t, child.COW(user+page))
	require.False(t, child.COW(user), "a shared page never is")
}

// A fork copies only while the frames in use, copies included, stay
// within a quarter of RAM: a program forking many children holds no
// more than that beyond what copy-on-write would hold.
func TestPolicyCopyAtForkWithinAQuarterOfRAM(t *testing.T) {
	as, fr := newSpace(t) // 4 MiB of RAM
	fr.SetPolicy(Policy{CopyAtFork: 1 << 20})
	require.NoError(t, as.Map(user, user+100*page, rw))
	var children []*Space
	for {
		child, cow, err := as.Clone()
		require.NoError(t, err)
		children = append(children, child)
		if cow {
			break
		}
		require.LessOrEqual(t, fr.InUse(), fr.ram.Size()/4, "fork %d", len(children))
		require.Less(t, len(children), 5, "four forks of 100 pages cannot fit in 1 MiB")
	}
	require.Greater(t, len(children), 1, "the first forks copied")
	require.True(t, as.COW(user), "then copy-on-write")
}

// With Policy.WidenInPlace a change that only widens entries of tables
// the guest has walked — pages mapped where none were (a grown heap, a
// new mapping, a PROT_NONE page made readable), more rights to the same
// frame — is written in place: the root stays, nothing is retired, and
// the walk finds the new entries. A narrower entry or another frame still
// copies the tables up to a new root, and without the policy (personality
// 12's replays) every change does.
func TestPolicyWidenInPlace(t *testing.T) {
	for _, widen := range []bool{false, true} {
		as, fr := newSpace(t)
		fr.SetPolicy(Policy{PresetAccessed: true, WidenInPlace: widen})
		require.NoError(t, as.Map(user, user+2*page, ProtRead))
		require.NoError(t, as.Map(user+4*page, user+5*page, 0))
		as.Published()
		root, retired := as.CR3(), len(fr.retired)
		stays := func(what string) {
			t.Helper()
			if !widen {
				require.NotEqual(t, root, as.CR3(), "without the policy, %s copies", what)
				root, retired = as.CR3(), len(fr.retired)
				as.Published()
				return
			}
			require.Equal(t, root, as.CR3(), "%s: in place", what)
			require.Len(t, fr.retired, retired, "%s: no table retired", what)
		}
		leaf := func(va uint64) uint64 {
			t.Helper()
			pte, err := as.Leaf(va)
			require.NoError(t, err)
			return pte
		}

		require.NoError(t, as.Map(user+2*page, user+4*page, rw))
		stays("a range mapped beside")
		pa, _ := as.Frame(user + 3*page)
		require.Equal(t, pa|fr.leafFlags(rw), leaf(user+3*page))

		require.NoError(t, as.Map(user+(1<<30), user+(1<<30)+page, rw))
		stays("a range mapped where no table was")
		require.NotZero(t, leaf(user+(1<<30))&ptePresent)

		require.NoError(t, as.Protect(user+4*page, user+5*page, ProtRead))
		stays("a PROT_NONE page made readable")
		pa, _ = as.Frame(user + 4*page)
		require.Equal(t, pa|fr.leafFlags(ProtRead), leaf(user+4*page))

		require.NoError(t, as.Protect(user, user+page, rw))
		stays("a read-only page made writable")
		pa, _ = as.Frame(user)
		require.Equal(t, pa|fr.leafFlags(rw), leaf(user))

		as.Published()
		root = as.CR3()
		require.NoError(t, as.Protect(user, user+page, ProtRead))
		require.NotEqual(t, root, as.CR3(), "a writable page made read-only copies (policy %v)", widen)
		require.Contains(t, fr.retired, root)
		require.Equal(t, pa|fr.leafFlags(ProtRead), leaf(user))
	}
}
