package mm

import (
	"bytes"
	"encoding/gob"
	"testing"

	"github.com/stretchr/testify/require"
)

// gobRoundTrip encodes v and decodes it into a new T, as a checkpoint
// file holds it.
func gobRoundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, gob.NewEncoder(&b).Encode(v))
	var out T
	require.NoError(t, gob.NewDecoder(&b).Decode(&out))
	return out
}

var limits = func(s *SavedFrames) Limits {
	return Limits{Frames: s, Nodes: 1, SiteLen: func(n uint8) bool { return n == 2 || n == 3 }}
}

// An allocator and an address space with a fork's shared frames, a file
// mapping, a patched site and retired tables restore to the same state,
// through gob, and act the same afterwards: the next frames taken are
// the same.
func TestSaveRestoreRoundTrip(t *testing.T) {
	as, fr := newSpace(t)
	require.NoError(t, as.Map(user, user+3*page, rw))
	require.NoError(t, as.Protect(user+2*page, user+3*page, ProtRead|ProtExec))
	as.AddFile(Mapping{Path: "/bin/prog", Start: user + 2*page, End: user + 3*page, Exec: true}, []byte("code"))
	as.AddFile(Mapping{Path: "/etc/data", Start: user, End: user + page}, []byte("data"))
	as.AddSite(user+2*page+8, 2)
	as.Published()
	fr.Ran()
	child, _, err := as.Clone()
	require.NoError(t, err)
	require.NoError(t, child.Write(user, []byte{1}))

	node := func(data []byte) int {
		if string(data) == "code" {
			return 0
		}
		return -1
	}
	sf := gobRoundTrip(t, fr.Save())
	ss := gobRoundTrip(t, as.Save(node))
	require.NoError(t, sf.Check(fr.ram.Size(), 2))
	require.NoError(t, ss.Check(limits(&sf)))
	require.Equal(t, 0, ss.Files[1].Node)
	require.Nil(t, ss.Files[1].Data, "named by its file, not kept")
	require.Equal(t, []byte("data"), ss.Files[0].Data)

	fr2 := RestoreFrames(fr.ram, nil, &sf)
	as2 := RestoreSpace(fr2, ss, 7, func(int) []byte { return []byte("code") })
	require.Equal(t, fr.Save(), fr2.Save())
	require.Equal(t, as.Save(node), as2.Save(node))
	require.Equal(t, 7, as2.FileAt(user+2*page).PID)
	require.Equal(t, []byte("code"), as2.FileAt(user+2*page).Data())
	require.Equal(t, uint8(2), as2.Site(user+2*page+8))
	require.True(t, as2.COW(user+page), "still shared with the child")

	// Both act alike from here: the same frames for the same changes.
	require.NoError(t, as.Write(user+page, []byte{2}))
	require.NoError(t, as2.Write(user+page, []byte{2}))
	a, _ := as.Frame(user + page)
	b, _ := as2.Frame(user + page)
	require.Equal(t, a, b)
	require.Equal(t, as.CR3(), as2.CR3())
}

// A saved allocator or address space that reaches outside RAM, names a
// file there is not, or does not fit together is refused, naming what.
func TestForgedStatesAreRefused(t *testing.T) {
	as, fr := newSpace(t)
	require.NoError(t, as.Map(user, user+2*page, rw))
	as.AddFile(Mapping{Path: "/lib", Start: user, End: user + page}, nil)
	as.AddSite(user+8, 3)
	ram := fr.ram.Size()

	for _, tc := range []struct {
		name  string
		forge func(*SavedFrames)
		want  string
	}{
		{"frames past RAM", func(s *SavedFrames) { s.Next = ram + page }, "frames end at"},
		{"frames in the system area", func(s *SavedFrames) { s.Next = page }, "frames end at"},
		{"unaligned end", func(s *SavedFrames) { s.Next++ }, "page-aligned"},
		{"free frame", func(s *SavedFrames) { s.Free = append(s.Free, s.Next) }, "free frame"},
		{"retired frame", func(s *SavedFrames) { s.Retired = append(s.Retired, 12345) }, "free frame"},
		{"settled", func(s *SavedFrames) { s.Settled = len(s.Retired) + 1 }, "retired frames settled"},
		{"negative settled", func(s *SavedFrames) { s.Settled = -1 }, "retired frames settled"},
		{"shared once", func(s *SavedFrames) { s.Shared = map[uint64]int{FirstFree: 1} }, "held 1 times"},
		{"shared too often", func(s *SavedFrames) { s.Shared = map[uint64]int{FirstFree: 4} }, "held 4 times"},
		{"object after the last", func(s *SavedFrames) { s.Objects = []SavedObject{{ID: s.LastObject + 1, Mapped: 1}} }, "shared object"},
		{"objects out of order", func(s *SavedFrames) {
			s.LastObject = 2
			s.Objects = []SavedObject{{ID: 2, Mapped: 1}, {ID: 1, Mapped: 1}}
		}, "shared object 1"},
		{"object mapped by none", func(s *SavedFrames) { s.LastObject, s.Objects = 1, []SavedObject{{ID: 1}} }, "mapped 0 pages"},
		{"object's frame", func(s *SavedFrames) {
			s.LastObject, s.Objects = 1, []SavedObject{{ID: 1, Mapped: 1, Frames: map[uint64]uint64{0: ram}}}
		}, "page 0 in frame"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := gobRoundTrip(t, fr.Save())
			tc.forge(&s)
			require.ErrorContains(t, s.Check(ram, 2), tc.want)
		})
	}

	for _, tc := range []struct {
		name  string
		forge func(*SavedSpace)
		want  string
	}{
		{"root", func(s *SavedSpace) { s.Root = 0 }, "page-table root"},
		{"table", func(s *SavedSpace) { s.Tables = append(s.Tables, ram) }, "page table"},
		{"fresh table", func(s *SavedSpace) { s.Fresh = append(s.Fresh, FirstFree+1) }, "page table"},
		{"page past RAM", func(s *SavedSpace) { s.Pages[user+4*page] = ram }, "page 0x40004000"},
		{"unaligned page", func(s *SavedSpace) { s.Pages[user+1] = FirstFree }, "page 0x40000001"},
		{"kernel page", func(s *SavedSpace) { s.Pages[MaxUserAddr] = FirstFree }, "page 0x7ffffffff000"},
		{"site length", func(s *SavedSpace) { s.TSCSites[user+8] = 4 }, "address 0x40000008"},
		{"copy-on-write address", func(s *SavedSpace) { s.COW = append(s.COW, MaxUserAddr) }, "address"},
		{"overlapping ranges", func(s *SavedSpace) { s.VMAs = append(s.VMAs, SavedVMA{Start: user + page, End: user + 3*page}) }, "range [0x40001000, 0x40003000)"},
		{"empty range", func(s *SavedSpace) { s.VMAs[0].End = s.VMAs[0].Start }, "range"},
		{"unaligned range", func(s *SavedSpace) { s.VMAs[0].End++ }, "range"},
		{"range past user space", func(s *SavedSpace) { s.VMAs[0].End = MaxUserAddr + page }, "range"},
		{"shared object", func(s *SavedSpace) { s.VMAs[0].Obj = 1 }, "shared object 1"},
		{"file node", func(s *SavedSpace) { s.Files[0].Node = 1 }, "file mapping"},
		{"file node below -1", func(s *SavedSpace) { s.Files[0].Node = -2 }, "file mapping"},
		{"file path", func(s *SavedSpace) { s.Files[0].Path = string(make([]byte, 5000)) }, "file mapping"},
		{"overlapping files", func(s *SavedSpace) { s.Files = append(s.Files, s.Files[0]) }, "file mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sf := fr.Save()
			s := gobRoundTrip(t, as.Save(func([]byte) int { return -1 }))
			require.NoError(t, s.Check(limits(&sf)), "unforged")
			tc.forge(s)
			require.ErrorContains(t, s.Check(limits(&sf)), tc.want)
		})
	}
}

// CheckCode refuses an executable mapping whose pages are not its file's
// bytes at its offset, and passes zeros and patched sites.
func TestCheckCode(t *testing.T) {
	as, _ := newSpace(t)
	code := bytes.Repeat([]byte{0x90}, 2*PageSize)
	require.NoError(t, as.Map(user, user+page, ProtRead|ProtExec))
	require.NoError(t, as.Load(user, code[page:2*page]))
	require.NoError(t, as.Load(user+16, []byte{0x0f, 0x0b})) // ud2 over an rdtsc
	as.AddSite(user+16, 2)
	as.AddFile(Mapping{Path: "/bin/prog", Start: user, End: user + page, Offset: page, Exec: true}, code)
	require.NoError(t, as.CheckCode())
	// A page the file's byte for byte (compared whole), then one byte off.
	require.NoError(t, as.Map(user+page, user+2*page, ProtRead|ProtExec))
	require.NoError(t, as.Load(user+page, code[:page]))
	as.AddFile(Mapping{Path: "/bin/prog", Start: user + page, End: user + 2*page, Offset: 0, Exec: true}, code)
	require.NoError(t, as.CheckCode())
	require.NoError(t, as.Load(user+page+5, []byte{0x91}))
	require.ErrorContains(t, as.CheckCode(), "the byte at 0x40001005 is not the file's at offset 0x5")
	require.NoError(t, as.Load(user+page+5, []byte{0x90}))

	require.NoError(t, as.Load(user+32, []byte{0xcc}))
	require.ErrorContains(t, as.CheckCode(), "the byte at 0x40000020 is not the file's at offset 0x1020")

	as.AddFile(Mapping{Path: "/bin/prog", Start: user, End: user + page, Offset: 3 * page, Exec: true}, code)
	require.ErrorContains(t, as.CheckCode(), "at offset 0x3000 of 8192 bytes")
}
