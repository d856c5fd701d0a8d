package probes

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// testImage builds testdata/{funcs.c,twin.c,insts.S} into a static image
// with .text at 0x400000, as the guest kit links its user code: C compiled
// -O2 for what a compiler emits, and one tiny asm function per instruction
// class (i_*) for the site decoder. Without a C compiler it skips (in CI it
// fails).
func testImage(t *testing.T) *elffile.Image {
	return buildImage(t, "funcs.c", "twin.c", "insts.S")
}

// buildImage builds the testdata sources into an image as testImage does.
func buildImage(t *testing.T, sources ...string) *elffile.Image {
	t.Helper()
	kvmtest.RequireTools(t, "cc")
	out := filepath.Join(t.TempDir(), "img.elf")
	td, err := filepath.Abs("testdata")
	require.NoError(t, err)
	args := []string{"-O2", "-fno-pic", "-no-pie", "-static", "-nostdlib",
		"-fcf-protection=none", "-fno-asynchronous-unwind-tables", "-fno-stack-protector",
		"-Wl,-T," + filepath.Join(td, "image.ld"), "-Wl,--build-id=none",
		"-Wl,--no-warn-rwx-segments", "-Wl,-z,noexecstack", "-o", out}
	for _, src := range sources {
		args = append(args, filepath.Join(td, src))
	}
	b, err := exec.Command("cc", args...).CombinedOutput()
	require.NoError(t, err, "building the test image:\n%s", b)
	img, err := elffile.OpenImage(out)
	require.NoError(t, err)
	return img
}

// kitImage builds (or finds cached) the guest kit and opens its image.
func kitImage(t *testing.T) *elffile.Image {
	t.Helper()
	return openKit(t, (*guest.Kit).Image)
}

// openKit builds the guest kit and opens one of its images.
func openKit(t *testing.T, which func(*guest.Kit) string) *elffile.Image {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kit, err := guest.Build(ctx)
	require.NoError(t, err, "building the guest kit (it needs cc, make, ld, objcopy)")
	img, err := elffile.OpenImage(which(kit))
	require.NoError(t, err)
	return img
}

// sym looks a symbol up or fails.
func sym(t *testing.T, img *elffile.Image, name string) elffile.Symbol {
	t.Helper()
	s, ok := img.Lookup(name)
	require.True(t, ok, "no symbol %s", name)
	return s
}

// resolve1 parses and resolves specs, failing on any error.
func resolve1(t *testing.T, img *elffile.Image, specs ...string) *Plan {
	t.Helper()
	ss, err := ParseSpecs(specs)
	require.NoError(t, err)
	p, err := Resolve(ss, img)
	require.NoError(t, err)
	return p
}

// resolveErr parses specs and returns Resolve's error.
func resolveErr(t *testing.T, img *elffile.Image, specs ...string) error {
	t.Helper()
	ss, err := ParseSpecs(specs)
	require.NoError(t, err)
	_, err = Resolve(ss, img)
	require.Error(t, err)
	return err
}
