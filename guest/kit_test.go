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
// vector table a recording's machine installs, and its kernel — code,
// data, stacks — in the supervisor pages of [abi.KernelBase,
// abi.UserBase), out of the workloads' reach.
func TestKitBuildsWithoutKVM(t *testing.T) {
	kvmtest.RequireTools(t, "cc", "ld", "make", "objcopy")
	k, err := guest.Build(context.Background())
	require.NoError(t, err)
	for _, path := range []string{k.Image(), k.HookImage(), k.PlainImage()} {
		img, err := elffile.OpenImage(path)
		require.NoError(t, err)
		_, ok := img.Lookup(abi.VectorsSymbol)
		require.True(t, ok, "%s has no %s", path, abi.VectorsSymbol)
		start, ok1 := img.Lookup("reprise_kernel_start")
		end, ok2 := img.Lookup("reprise_kernel_end")
		require.True(t, ok1 && ok2, path)
		require.Equal(t, uint64(abi.KernelBase), start.Addr, path)
		require.Greater(t, end.Addr, start.Addr, "%s: the kernel is in the supervisor pages", path)
		require.LessOrEqual(t, end.Addr, uint64(abi.UserBase), path)
		for _, name := range []string{"reprise_kernel_entry", "kmain", "reprise_current_tid"} {
			s, ok := img.Lookup(name)
			require.True(t, ok, "%s: %s", path, name)
			require.True(t, s.Addr >= start.Addr && s.Addr < end.Addr, "%s: %s at %#x, outside the kernel's [%#x, %#x)", path, name, s.Addr, start.Addr, end.Addr)
		}
	}
}
