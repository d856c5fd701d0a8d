package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// Paths a Linux program, or the files it is given, can name to make
// reprise read or write a host file the user did not give it.

// hostFiles is what a test expects of host files it must not see change:
// each path's contents and permission bits.
type hostFiles map[string]string

// snapshot records the contents and mode of each file in paths.
func snapshot(t *testing.T, paths ...string) hostFiles {
	t.Helper()
	s := hostFiles{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		st, err := os.Stat(p)
		require.NoError(t, err)
		s[p] = st.Mode().String() + " " + string(b)
	}
	return s
}

// unchanged requires every file of s as it was, and dir to hold only
// s's files (nothing created in it).
func (s hostFiles) unchanged(t *testing.T, dir string) {
	t.Helper()
	now := snapshot(t, keys(s)...)
	require.Equal(t, s, now)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		_, known := s[filepath.Join(dir, e.Name())]
		require.True(t, known, "%s was created", filepath.Join(dir, e.Name()))
	}
}

func keys(s hostFiles) []string {
	var out []string
	for k := range s {
		out = append(out, k)
	}
	return out
}

// outsideFiles makes a directory of files outside every directory the
// program is given: a 0600 secret and a 0600 victim to overwrite.
func outsideFiles(t *testing.T) (dir, secret, victim string) {
	t.Helper()
	dir = t.TempDir()
	secret, victim = filepath.Join(dir, "secret"), filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(secret, []byte("SECRET-0600-do-not-print\n"), 0o600))
	require.NoError(t, os.WriteFile(victim, []byte("ORIGINAL\n"), 0o600))
	return dir, secret, victim
}

// --keep-writes DIR writes below DIR only: a link in DIR to a directory
// outside is refused by name (the run says so and fails), a link or a hard
// link at a file's place is replaced, not written through; the files the
// link does not lead to are kept. Before, the program created and
// overwrote host files outside DIR through the links, and reprise said
// "kept 3 written files".
func TestKeepWritesStayInTheDirectory(t *testing.T) {
	bb := busybox(t)
	for _, cmd := range []string{"run", "record"} {
		t.Run(cmd, func(t *testing.T) {
			outside, _, victim := outsideFiles(t)
			linked := filepath.Join(outside, "linked")
			require.NoError(t, os.WriteFile(linked, []byte("LINKED\n"), 0o600))
			before := snapshot(t, filepath.Join(outside, "secret"), victim, linked)

			keep := t.TempDir()
			require.NoError(t, os.Symlink(outside, filepath.Join(keep, "tmp")))
			require.NoError(t, os.Symlink(victim, filepath.Join(keep, "v")))
			require.NoError(t, os.Link(linked, filepath.Join(keep, "h")))
			args := []string{cmd, "--keep-writes", keep}
			if cmd == "record" {
				args = append(args, "-o", filepath.Join(t.TempDir(), "k.tape"))
			}
			r := runCLI(t, nil, append(args, "--", bb, "sh", "-c", "echo pwned > /tmp/new; echo pwned > /v; echo pwned > /h")...)
			before.unchanged(t, outside)
			require.Equal(t, exitFailure, r.code, r.stderr)
			require.Contains(t, r.stderr, filepath.Join(keep, "tmp")+" is a symbolic link")
			for _, name := range []string{"v", "h"} {
				st, err := os.Lstat(filepath.Join(keep, name))
				require.NoError(t, err)
				require.True(t, st.Mode().IsRegular(), "%s: %v", name, st.Mode())
				b, err := os.ReadFile(filepath.Join(keep, name))
				require.NoError(t, err)
				require.Equal(t, "pwned\n", string(b))
			}
		})
	}
}

// --root R --keep-writes R: the program's writes go back into R, never
// through R's links to files outside it: in the program's view, R's
// absolute links resolve inside R, where their targets are not, and
// below R no link is followed when writes are kept.
func TestKeepWritesIntoTheRoot(t *testing.T) {
	bb := busybox(t)
	outside, secret, victim := outsideFiles(t)
	before := snapshot(t, secret, victim)
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "out")))
	require.NoError(t, os.Symlink(victim, filepath.Join(root, "etc", "victim")))
	r := runCLI(t, nil, "run", "--root", root, "--keep-writes", root, "--", bb, "sh", "-c",
		"echo pwned > /etc/victim; mkdir -p /out; echo pwned > /out/new")
	before.unchanged(t, outside)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stdout+r.stderr, "can't create /etc/victim: nonexistent directory")
	for _, link := range []string{"out", filepath.Join("etc", "victim")} {
		st, err := os.Lstat(filepath.Join(root, link))
		require.NoError(t, err)
		require.Equal(t, os.ModeSymlink, st.Mode().Type(), "%s is still the link it was", link)
	}
}

// --root R shows R as a chroot to R shows it: its links resolve inside R,
// as if R were /, so an absolute link, or a relative one climbing out, to
// a 0600 host file outside R finds nothing, while a link within R works,
// recorded and replayed. Before, both printed the secret.
func TestRootConfinesLinks(t *testing.T) {
	bb := busybox(t)
	_, secret, _ := outsideFiles(t)
	root := t.TempDir()
	etc := filepath.Join(root, "etc")
	require.NoError(t, os.MkdirAll(etc, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "inside"), []byte("inside the root\n"), 0o644))
	require.NoError(t, os.Symlink(secret, filepath.Join(etc, "absolute")))
	climb, err := filepath.Rel(etc, secret)
	require.NoError(t, err)
	require.NoError(t, os.Symlink(climb, filepath.Join(etc, "relative")))
	require.NoError(t, os.Symlink("/inside", filepath.Join(etc, "within")))

	for _, link := range []string{"absolute", "relative"} {
		r := runCLI(t, nil, "run", "--root", root, "--", bb, "cat", "/etc/"+link)
		require.NotContains(t, r.stdout+r.stderr, "SECRET")
		require.Equal(t, 1, r.code, r.stderr)
		require.Contains(t, r.stdout, "can't open '/etc/"+link+"': No such file or directory")
	}
	tp := filepath.Join(t.TempDir(), "root.tape")
	r := runCLI(t, nil, "record", "-o", tp, "--root", root, "--", bb, "cat", "/etc/within")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "inside the root\n", r.stdout)
	rep := runCLI(t, nil, "replay", tp)
	require.Equal(t, 0, rep.code, rep.stderr)
	require.Equal(t, "inside the root\n", rep.stdout)
}

// gccBuild compiles the C source src (text) with flags into dir/name.
func gccBuild(t *testing.T, dir, name, src string, flags ...string) string {
	t.Helper()
	kvmtest.RequireTools(t, "gcc")
	c := filepath.Join(dir, name+".c")
	require.NoError(t, os.WriteFile(c, []byte(src), 0o644))
	out := filepath.Join(dir, name)
	b, err := exec.Command("gcc", append([]string{"-O1", "-o", out, c}, flags...)...).CombinedOutput()
	require.NoError(t, err, "%s", b)
	return out
}

// decimal is how debug/elf quotes a file's first bytes: "[84 79 80 83]".
func decimal(b []byte) string {
	var s []string
	for _, c := range b[:4] {
		s = append(s, strconv.Itoa(int(c)))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// buildLib compiles the C source src into a shared library at out whose
// soname, what a program linked with it needs, is soname.
func buildLib(t *testing.T, out, src, soname string) {
	t.Helper()
	c := out + ".c"
	require.NoError(t, os.WriteFile(c, []byte(src), 0o644))
	b, err := exec.Command("gcc", "-shared", "-fPIC", "-o", out, c, "-Wl,-soname,"+soname).CombinedOutput()
	require.NoError(t, err, "%s", b)
}
