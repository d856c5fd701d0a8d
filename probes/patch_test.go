package probes

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Which sites a 2-byte exit may patch, and why the others keep int3
// (testdata/exits.S says what each function is for).
func TestChoosePatches(t *testing.T) {
	img := buildImage(t, "exits.S")
	p := resolve1(t, img, "x_entry", "x_long", "x_ret", "x_loop", "x_table", "x_table_long", "x_port+2", "x_inport", "x_pair", "x_pair+2")
	want := map[string]string{ // site -> why it keeps int3 ("" for an exit)
		"x_entry":      "",
		"x_long":       "",
		"x_ret":        "it is a 1-byte ret, too short for the 2-byte exit",
		"x_loop":       "x_loop+0x1, among the instructions its exit would overwrite, is a branch target",
		"x_table":      "x_table jumps through a register or table",
		"x_table_long": "",
		"x_port+0x2":   "a port access ends where it starts",
		"x_inport":     "accesses a port",
		"x_pair":       "",
		"x_pair+0x2":   "the exit site at x_pair starts 2 bytes before it",
	}
	require.Len(t, p.Sites, len(want))
	for _, s := range p.Sites {
		where := img.Describe(s.Addr)
		why, ok := want[where]
		require.True(t, ok, where)
		if why == "" {
			require.Equal(t, PatchExit, s.Patch, "%s: %s", where, s.NoExit)
			require.Empty(t, s.NoExit, where)
			continue
		}
		require.Equal(t, PatchInt3, s.Patch, where)
		require.Contains(t, s.NoExit, why, where)
		require.Empty(t, s.Displaced, where)
	}

	// The push at x_entry displaces the mov after it; x_long's mov covers
	// the exit alone.
	entry, _ := p.SiteAt(sym(t, img, "x_entry").Addr)
	require.Len(t, entry.Displaced, 1)
	require.Equal(t, entry.Next(), entry.Displaced[0].Addr)
	require.Equal(t, 3, entry.Displaced[0].Len, "mov %%rsp, %%rbp")
	long, _ := p.SiteAt(sym(t, img, "x_long").Addr)
	require.Empty(t, long.Displaced)

	// A site among the instructions another's exit would overwrite makes
	// that one int3; it can have an exit itself.
	p = resolve1(t, img, "x_entry", "x_entry+1")
	entry, _ = p.SiteAt(sym(t, img, "x_entry").Addr)
	require.Equal(t, PatchInt3, entry.Patch)
	require.Contains(t, entry.NoExit, "the site at x_entry+0x1 is among the instructions its exit would overwrite")
	mov, _ := p.SiteAt(sym(t, img, "x_entry").Addr + 1)
	require.Equal(t, PatchExit, mov.Patch, mov.NoExit)
}

// The guest kit's lock functions take exits: the probes lockstat and
// deadlock place are the cheap kind.
func TestKitLockSitesExit(t *testing.T) {
	img := kitImage(t)
	p := resolve1(t, img, "mutex_lock", "mutex_unlock", "mutex_trylock")
	for _, s := range p.Sites {
		require.Equal(t, PatchExit, s.Patch, "%s: %s", img.Describe(s.Addr), s.NoExit)
	}
}

func TestPatchString(t *testing.T) {
	require.Equal(t, "int3", PatchInt3.String())
	require.Equal(t, "exit", PatchExit.String())
	require.Equal(t, "Patch(7)", Patch(7).String())
}
