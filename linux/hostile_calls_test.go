package linux_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// tmpfsDir is a new directory on the host's tmpfs. The program's files
// are in memory, as a tmpfs's are, and Linux's answers at the limits
// (the largest offset, SEEK_DATA, a directory's lseek) depend on the file
// system, so the host runs a program there to say what Linux does.
func tmpfsDir(t *testing.T) string {
	t.Helper()
	const shm = "/dev/shm"
	var st unix.Statfs_t
	if err := unix.Statfs(shm, &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		t.Skipf("no tmpfs at %s to run the program natively in", shm)
	}
	dir, err := os.MkdirTemp(shm, "reprise-hostile")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// A program that passes offsets, counts and paths at their limits —
// pwrite, write after lseek and sendfile near the largest offset, negative
// offsets and lengths, iovec lengths past SSIZE_MAX, "", "/etc/passwd/..",
// pread on a pipe — gets what Linux answers, byte for byte, live, recorded
// and replayed. Before, the first of them panicked the VMM (exit 2, the
// tape left without events).
func TestHostileCalls(t *testing.T) {
	bin := build(t, "musl-gcc", "hostilecalls.c", "-static", "-O1")
	cmd := exec.Command(bin)
	cmd.Dir = tmpfsDir(t)
	want, err := cmd.Output()
	require.NoError(t, err)
	require.Contains(t, string(want), "pwrite 16 at max-8: -1 Invalid argument\n", "the host's answer")
	prints(t, bin, "hostilecalls", string(want), 0)
}
