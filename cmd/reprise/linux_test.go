package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// An unmodified static Linux program runs, records, replays and shows in
// info through the CLI, with its arguments after --, and --env.
func TestLinuxProgramCLI(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "musl-gcc")
	dir := t.TempDir()
	bin := filepath.Join(dir, "hello")
	out, err := exec.Command("musl-gcc", "-static", "-O2", "-o", bin, filepath.Join("..", "..", "linux", "testdata", "hello.c")).CombinedOutput()
	require.NoError(t, err, string(out))

	want := "hello from " + bin + " with 3 args\narg 1: -o\narg 2: x y\n" +
		"env: PATH=/usr/local/bin:/usr/bin:/bin\nenv: HOME=/\nenv: LANG=C\nenv: TERM=dumb\nenv: COLOR=blue\n" +
		"heap works\nclock ok: 1\n"
	r := runCLI(t, nil, "run", "--env", "COLOR=blue", "--", bin, "-o", "x y")
	require.Equal(t, 3, r.code, r.stderr)
	require.Equal(t, want, r.stdout)

	tp := filepath.Join(dir, "hello.tape")
	r = runCLI(t, nil, "record", "-o", tp, "--env", "COLOR=blue", "--", bin, "-o", "x y")
	require.Equal(t, 3, r.code, r.stderr)
	require.Equal(t, want, r.stdout)
	rep := runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Equal(t, want, rep.stdout)
	require.Contains(t, rep.stderr, "replay matched")

	info := runCLI(t, nil, "info", tp)
	require.Equal(t, 0, info.code, info.stderr)
	require.Contains(t, info.stdout, "program    "+bin+" (Linux")
	require.Contains(t, info.stdout, `argv       ["`+bin+`" "-o" "x y"]`)
	require.Contains(t, info.stdout, "syscall-granular")

	// Not an executable: a clear refusal naming the file.
	r = runCLI(t, nil, "run", "--", filepath.Join("..", "..", "linux", "testdata", "hello.c"))
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "hello.c is not an ELF executable")
}

// busybox-static is a static glibc program nobody here wrote; its echo
// and its own arithmetic print what the host's do.
func TestBusyboxEcho(t *testing.T) {
	kvmtest.Require(t)
	kvmtest.RequireTools(t, "busybox")
	bb, err := exec.LookPath("busybox")
	require.NoError(t, err)
	r := runCLI(t, nil, "run", "--", bb, "echo", "hello", "from", "busybox")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "hello from busybox\n", r.stdout)
}
