// Package kvmtest is the one harness for tests that need /dev/kvm: it skips
// them where KVM is unusable, except in CI (CI=true, set by .ci/run), where an
// unusable /dev/kvm fails the run, so a green CI means the guests really ran.
// The one exception is a CI host with no /dev/kvm at all: there .ci/run also
// runs a set of the KVM tests under nested emulation (.ci/nested), which must
// pass, and says so with NestedEnv; the host's own KVM tests skip, naming why.
package kvmtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/reprise-vm/reprise/kvm"
)

// NestedEnv is set (to "1") by .ci/run on a host without /dev/kvm, where the
// same run also runs .ci/nested/tests under nested emulation.
const NestedEnv = "REPRISE_CI_NESTED_KVM"

// Require skips (or, in CI, fails) t unless KVM is usable.
func Require(t testing.TB) {
	t.Helper()
	err := kvm.Usable(kvm.DevicePath)
	switch {
	case err == nil:
	case inCI() && errors.Is(err, kvm.ErrNoDevice) && os.Getenv(NestedEnv) == "1":
		t.Skipf("this CI host has no KVM (.ci/run runs .ci/nested/tests under nested emulation instead): %v", err)
	case inCI():
		t.Fatalf("CI requires a usable KVM: %v", err)
	default:
		t.Skipf("KVM unusable: %v", err)
	}
}

const linkScript = `ENTRY(_start)
SECTIONS {
	. = 0x200000;
	.text : { *(.text*) }
	.data : { *(.data*) }
	.bss : { *(.bss*) *(COMMON) }
	/DISCARD/ : { *(.note*) *(.comment) }
}
`

// Vectors is the assembly of an image's interrupt vector table
// (reprise_vectors: 16-byte slots, as x86.BuildIDT expects) whose first n
// vectors trap with ud2 and whose vector n runs handler.
func Vectors(n int, handler string) string {
	return fmt.Sprintf(`
.balign 16
reprise_vectors:
	.rept %d
	.balign 16
	ud2
	.endr
	.balign 16
%s
`, n, handler)
}

// AsmImage assembles and links a tiny guest image from GNU assembler
// source, loaded at 0x200000 (the kernel window), and returns its path.
func AsmImage(t testing.TB, src string) string {
	t.Helper()
	dir := t.TempDir()
	s := filepath.Join(dir, "img.S")
	if err := os.WriteFile(s, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ld := filepath.Join(dir, "img.ld")
	if err := os.WriteFile(ld, []byte(linkScript), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "img.elf")
	cmd := exec.Command("cc", "-nostdlib", "-static", "-no-pie", "-Wl,-T,"+ld, "-Wl,--build-id=none",
		"-Wl,--no-warn-rwx-segments", "-Wl,-z,noexecstack", "-o", out, s)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("assembling test image: %v\n%s", err, b)
	}
	return out
}

// inCI reports whether the tests run under .ci/run, which installs and
// sets up everything they need: there a missing tool or host facility is a
// broken CI machine, not a reason to skip.
func inCI() bool { return os.Getenv("CI") == "true" }

// RequireTools skips (or, in CI, fails) t unless every named program is on
// PATH.
func RequireTools(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			if inCI() {
				t.Fatalf("CI requires %s (.ci/run installs it): %v", n, err)
			}
			t.Skipf("%s not found: %v", n, err)
		}
	}
}

// RequireHost skips (or, in CI, fails) t when err says the host lacks a
// facility the test needs (tracefs, say); what names it.
func RequireHost(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if inCI() {
		t.Fatalf("CI requires %s (.ci/run sets it up): %v", what, err)
	}
	t.Skipf("%s unavailable: %v", what, err)
}
