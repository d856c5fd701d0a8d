// Package cprog builds the C (and Go) programs of the tests that check
// reprise on real Linux programs against their own ground truth and
// against the reference tools (valgrind, perf): each program prints what
// it did ("truth NAME N" lines).
package cprog

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/internal/kvmtest"
)

// Build compiles the program name (testdata/name.c here) with cc and flags into
// the test's temporary directory and returns the executable's path.
func Build(t testing.TB, cc, name string, flags ...string) string {
	t.Helper()
	kvmtest.RequireTools(t, cc)
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "testdata", name+".c")
	_, err := os.Stat(src)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), name+"-"+filepath.Base(cc))
	b, err := exec.Command(cc, append(flags, "-o", out, src)...).CombinedOutput()
	require.NoError(t, err, "%s %s: %s", cc, name, b)
	return out
}

// BuildGo compiles the Go program name (testdata/name/ here), static,
// into the test's temporary directory and returns the executable's path.
func BuildGo(t testing.TB, name string) string {
	t.Helper()
	kvmtest.RequireTools(t, "go")
	_, self, _, _ := runtime.Caller(0)
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = filepath.Join(filepath.Dir(self), "testdata", name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", name, b)
	return out
}

// Truth parses a program's "truth NAME N" lines.
func Truth(output string) map[string]int {
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^truth (\S+) (\d+)`).FindAllStringSubmatch(output, -1) {
		n, _ := strconv.Atoi(m[2])
		out[m[1]] = n
	}
	return out
}
