package guest_test

import (
	"context"
	"debug/dwarf"
	"debug/elf"
	"slices"
	"strings"
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

// The debug kit is the kit, as it loads, with DWARF a debugger can read:
// the user code's lines, and one entry line per function (the branch
// counter's pair counts as the function's first line, not a line before
// it).
func TestDebugKitLoadsAsTheKit(t *testing.T) {
	kvmtest.RequireTools(t, "cc", "ld", "make", "objcopy")
	k, err := guest.Build(context.Background())
	require.NoError(t, err)
	kit, err := elffile.OpenImage(k.Image())
	require.NoError(t, err)
	dbg, err := elffile.OpenImage(k.DebugImage())
	require.NoError(t, err)
	require.True(t, dbg.LoadsAs(kit), "kit-debug.elf loads differently from kit.elf")
	plain, err := elffile.OpenImage(k.PlainImage())
	require.NoError(t, err)
	require.False(t, plain.LoadsAs(kit))

	f, err := elf.Open(k.DebugImage())
	require.NoError(t, err)
	defer f.Close()
	d, err := f.DWARF()
	require.NoError(t, err)
	worker, ok := kit.Lookup("worker")
	require.True(t, ok)
	var rows []dwarf.LineEntry
	r := d.Reader()
	for {
		cu, err := r.Next()
		require.NoError(t, err)
		require.NotNil(t, cu, "no compilation unit holds worker")
		if cu.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		if rs, err := d.Ranges(cu); err != nil || !slices.ContainsFunc(rs, func(x [2]uint64) bool { return worker.Addr >= x[0] && worker.Addr < x[1] }) {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(cu)
		require.NoError(t, err)
		for {
			var e dwarf.LineEntry
			if lr.Next(&e) != nil {
				break
			}
			if e.Address >= worker.Addr && e.Address < worker.Addr+worker.Size {
				rows = append(rows, e)
			}
		}
		break
	}
	require.NotEmpty(t, rows)
	require.Equal(t, worker.Addr, rows[0].Address, "worker's first line starts at the function, counter pair included")
	require.True(t, strings.HasSuffix(rows[0].File.Name, "syn_cont.c"), rows[0].File.Name)
}
