package guest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/abi"
	"github.com/reprise-vm/reprise/elffile"
	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// The kit builds on any host with a C toolchain, KVM or not (a host without
// KVM still records nothing, but it can build, and CI's nested-emulation
// run finds the kit already built): each image is a kit image, with the
// vector table a recording's machine installs.
func TestKitBuildsWithoutKVM(t *testing.T) {
	kvmtest.RequireTools(t, "cc", "ld", "make", "objcopy")
	k, err := guest.Build(context.Background())
	require.NoError(t, err)
	for _, path := range []string{k.Image(), k.HookImage(), k.PlainImage()} {
		img, err := elffile.OpenImage(path)
		require.NoError(t, err)
		_, ok := img.Lookup(abi.VectorsSymbol)
		require.True(t, ok, "%s has no %s", path, abi.VectorsSymbol)
	}
}
