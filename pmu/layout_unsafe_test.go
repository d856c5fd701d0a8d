package pmu

// Layout checks for the raw structs passed to the kernel. This file imports
// unsafe, hence its name.

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestRawStructSizes(t *testing.T) {
	// struct f_owner_ex { int type; __kernel_pid_t pid; }
	require.EqualValues(t, 8, unsafe.Sizeof(fOwnerEx{}), "struct f_owner_ex")
	require.EqualValues(t, 4, unsafe.Offsetof(fOwnerEx{}.PID), "f_owner_ex.pid")
	// branchAttr's Size field must be the struct's real size: the kernel
	// reads that many bytes. x/sys's struct is PERF_ATTR_SIZE_VER7 (up to
	// sig_data); a newer x/sys may grow it, which is fine.
	attr := branchAttr(intelCond, 1)
	require.EqualValues(t, unsafe.Sizeof(unix.PerfEventAttr{}), attr.Size)
	require.GreaterOrEqual(t, attr.Size, uint32(unix.PERF_ATTR_SIZE_VER7))
	require.Equal(t, reflect.TypeFor[unix.PerfEventAttr]().Size(), unsafe.Sizeof(unix.PerfEventAttr{}))
}
