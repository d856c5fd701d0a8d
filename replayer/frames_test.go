package replayer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/guest"
)

// unbuiltFrame finds a function's return address above rsp until its
// frame is built: in the r15 kit, past the count and before push %rbp, and
// between push and mov; anywhere in a leaf GCC gave no frame (prof_a); in
// the trace-pc kit, whose functions start with the push.
func TestUnbuiltFrame(t *testing.T) {
	k, err := guest.Build(context.Background())
	require.NoError(t, err)
	open := func(path string) *elffile.Image {
		img, err := elffile.OpenImage(path)
		require.NoError(t, err)
		return img
	}
	r15, hook := open(k.Image()), open(k.HookImage())
	sym := func(img *elffile.Image, name string) uint64 {
		s, ok := img.Lookup(name)
		require.True(t, ok, name)
		return s.Addr
	}
	for _, tc := range []struct {
		img    *elffile.Image
		rip    uint64
		off    uint64
		before bool
	}{
		{r15, sym(r15, "prof_run") + 8, 0, true},   // after the count, before push %rbp
		{r15, sym(r15, "prof_run") + 9, 8, true},   // between push and mov
		{r15, sym(r15, "prof_run") + 12, 0, false}, // frame built
		{r15, sym(r15, "prof_a") + 8, 0, true},     // a leaf without a frame
		{r15, sym(r15, "prof_a") + 0x40, 0, true},
		{hook, sym(hook, "prof_run"), 0, true},
		{hook, sym(hook, "prof_run") + 1, 8, true},
		{hook, sym(hook, "prof_run") + 4, 0, false},
	} {
		off, ok := unbuiltFrame(tc.img, tc.rip)
		require.Equal(t, tc.before, ok, "%s", tc.img.Describe(tc.rip))
		require.Equal(t, tc.off, off, "%s", tc.img.Describe(tc.rip))
	}
	_, ok := unbuiltFrame(nil, 0x400000)
	require.False(t, ok)
}
