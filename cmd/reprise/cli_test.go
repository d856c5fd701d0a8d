package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"

	"github.com/reprise-vm/reprise/guest"
	"github.com/reprise-vm/reprise/internal/kvmtest"
)

var reprise string // path of the binary under test

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "reprise-cli")
	if err != nil {
		panic(err)
	}
	reprise = filepath.Join(dir, "reprise")
	if prebuilt := os.Getenv("REPRISE_TEST_BINARY"); prebuilt != "" {
		// Built from this source already, outside the emulated VM that
		// .ci/nested runs these tests in (a build there takes minutes).
		reprise = prebuilt
	} else if out, err := exec.Command("go", "build", "-o", reprise, ".").CombinedOutput(); err != nil {
		panic("building reprise: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type cliResult struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, reprise, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return cliResult{code, out.String(), errb.String()}
}

func TestWorkloadsListsEveryWorkload(t *testing.T) {
	r := runCLI(t, nil, "workloads")
	require.Equal(t, 0, r.code, r.stderr)
	for _, w := range guest.Workloads() {
		require.Contains(t, r.stdout, w.Name)
		require.Contains(t, r.stdout, w.Description)
	}
	require.GreaterOrEqual(t, len(guest.Workloads()), 8)
}

// --cpuprofile writes a profile go tool pprof reads, for a command that
// succeeds and for one that fails (its exit status kept).
func TestCPUProfile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"workloads"}, 0},
		{[]string{"info", filepath.Join(dir, "missing.tape")}, exitFailure},
	} {
		path := filepath.Join(dir, tc.args[0]+".prof")
		r := runCLI(t, nil, append([]string{"--cpuprofile", path}, tc.args...)...)
		require.Equal(t, tc.code, r.code, r.stderr)
		f, err := os.Open(path)
		require.NoError(t, err)
		p, err := profile.Parse(f)
		require.NoError(t, f.Close())
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, "cpu", p.SampleType[len(p.SampleType)-1].Type, "%v", tc.args)
	}
	r := runCLI(t, nil, "--cpuprofile", filepath.Join(dir, "no", "such", "dir.prof"), "workloads")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "--cpuprofile: ")
}

func TestRunHelloStreamsConsoleAndExitsZero(t *testing.T) {
	kvmtest.Require(t)
	r := runCLI(t, nil, "run", "--stats", "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "truth: result=ok")
	require.Contains(t, r.stderr, "exits:")
	require.Contains(t, r.stderr, "in the VMM between them")

	// The kit's image named by its path is an image that brings its own
	// kernel, not a Linux program (mayBringKernel).
	kit, err := guest.Build(context.Background())
	require.NoError(t, err)
	r = runCLI(t, nil, "run", kit.Image(), "hello")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "truth: result=ok")
}

func TestRunErrors(t *testing.T) {
	kvmtest.Require(t)
	notELF := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(notELF, []byte("hello"), 0o644))
	kit, err := guest.Build(context.Background())
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"unknown workload", []string{"run", "nosuch"}, exitFailure, []string{"unknown workload", "reprise workloads"}},
		{"missing image", []string{"run", "./no/such.elf"}, exitFailure, []string{"no such file"}},
		{"not an ELF", []string{"run", notELF}, exitFailure, []string{"not an ELF file"}},
		{"no KVM", []string{"run", "--kvm", "/nonexistent/kvm", "hello"}, exitFailure, []string{"does not exist", "no KVM"}},
		{"triple fault", []string{"run", kit.TestImage("triple")}, exitFailure, []string{"triple fault", "rip", "rflags"}},
		{"user null dereference", []string{"run", "crash", "kind=null"}, exitFailure, []string{"guest fault", "#PF", "CPL3", "cr2 0x0"}},
		{"timeout", []string{"run", "--timeout", "300ms", "cpu", "digits=100000"}, exitTimeout, []string{"--timeout 300ms expired"}},
		{"bad size", []string{"run", "--mem", "lots", "hello"}, exitUsage, []string{"size"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, nil, tc.args...)
			require.Equal(t, tc.code, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			for _, w := range tc.want {
				require.Contains(t, r.stderr, w)
			}
		})
	}
}

// A recording that cannot start — here, no KVM — leaves no file behind:
// neither a tape nor a checkpoint file, which would also refuse the next
// recording to the same name.
func TestRecordWithoutKVMLeavesNoFiles(t *testing.T) {
	for _, guest := range [][]string{{"hello"}, {"--", "/bin/true"}} {
		dir := t.TempDir()
		args := append([]string{"record", "--kvm", "/nonexistent/kvm", "--checkpoint-every", "10ms", "-o", filepath.Join(dir, "t.tape")}, guest...)
		r := runCLI(t, nil, args...)
		require.Equal(t, exitFailure, r.code, r.stderr)
		require.Contains(t, r.stderr, "no KVM")
		left, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, left, "%v left files", guest)
	}
}

// Without a C toolchain the kit cannot be built: the message says what to
// install instead of failing somewhere inside make.
func TestRunWithoutCompiler(t *testing.T) {
	r := runCLI(t, []string{"PATH=" + t.TempDir(), "REPRISE_CACHE=" + t.TempDir()}, "run", "hello")
	require.Equal(t, exitFailure, r.code)
	require.Contains(t, r.stderr, "no C toolchain")
	require.Contains(t, r.stderr, "apt-get install")
}

// Ctrl-C stops the guest promptly and says so in the exit status.
func TestRunInterrupted(t *testing.T) {
	kvmtest.Require(t)
	cmd := exec.Command(reprise, "run", "cpu", "digits=100000")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Start())
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "want an exit error, got %v", err)
	require.Equal(t, exitInterrupted, ee.ExitCode(), errb.String())
	require.Contains(t, errb.String(), "interrupted")
}
