package linux_test

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// A program that makes raw system calls with garbage in the registers
// they do not take gets what Linux gives it: renameat with junk in r8
// renames the file, as the host's does. The output is the host's.
func TestGarbageInUntakenRegisters(t *testing.T) {
	bin := build(t, "musl-gcc", "garbage.c", "-static", "-O1")
	want, err := exec.Command(bin, t.TempDir()).Output()
	require.NoError(t, err)
	require.Contains(t, string(want), "renameat: 0\nold name: -1, new name: 0\n")
	res, out, err := runLive(t, bin, []string{"garbage", t.TempDir()}, nil)
	require.NoError(t, err, out)
	require.Equal(t, uint32(0), res.Status, out)
	require.Equal(t, string(want), out)
}
