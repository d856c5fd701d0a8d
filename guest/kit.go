// Package guest builds and describes the guest kit: a small x86-64 kernel,
// a user library and the bundled workloads, written in C and assembly and
// compiled with the system cc. The sources are embedded in the reprise
// binary and built on first use into a cache directory named by their
// content hash, so a build happens once per kit version.
package guest

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

//go:embed Makefile link.ld include kernel lib workloads tests tools
var sources embed.FS

// Outputs of the kit's Makefile, relative to the build directory.
const (
	kitImage   = "kit.elf"
	debugImage = "kit-debug.elf"
	hookImage  = "kit-tracepc.elf"
	plainImage = "kit-plain.elf"
	nativeCPU  = "cpu-native"
	testsDir   = "tests"
)

// Kit is a built guest kit.
type Kit struct {
	Dir string // directory holding the build outputs
}

// Image is the kit whose user code keeps the register branch counter:
// the default image.
func (k *Kit) Image() string { return filepath.Join(k.Dir, kitImage) }

// DebugImage is Image with the DWARF of its user code, for a debugger:
// the same program, byte for byte, as it loads.
func (k *Kit) DebugImage() string { return filepath.Join(k.Dir, debugImage) }

// SourceDir holds the sources the kit was built from, as its DWARF names
// them (relative paths: workloads/cpu.c).
func (k *Kit) SourceDir() string { return filepath.Dir(k.Dir) }

// HookImage is the kit whose user code counts branches through the
// trace-pc hook: the other software branch counter, kept to compare with.
func (k *Kit) HookImage() string { return filepath.Join(k.Dir, hookImage) }

// PlainImage is the kit built without the software branch counter.
func (k *Kit) PlainImage() string { return filepath.Join(k.Dir, plainImage) }

// NativeCPU is the cpu workload's core built as a host program.
func (k *Kit) NativeCPU() string { return filepath.Join(k.Dir, nativeCPU) }

// TestImage is a small special-purpose image, e.g. "triple".
func (k *Kit) TestImage(name string) string { return filepath.Join(k.Dir, testsDir, name+".elf") }

// ErrNoCompiler means the host cannot build the kit.
var ErrNoCompiler = errors.New("guest: no C toolchain: reprise builds its guest kit with the system cc, ld and make (Debian/Ubuntu: apt-get install gcc make)")

var (
	buildOnce sync.Once
	built     *Kit
	buildErr  error
)

// Build returns the kit, building it if this version is not cached yet.
// It is safe to call from several goroutines and processes at once.
func Build(ctx context.Context) (*Kit, error) {
	buildOnce.Do(func() { built, buildErr = build(ctx) })
	return built, buildErr
}

// Hash identifies this version of the kit's sources.
func Hash() string {
	h := sha256.New()
	var paths []string
	_ = fs.WalkDir(sources, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	for _, p := range paths {
		b, _ := sources.ReadFile(p)
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func cacheRoot() (string, error) {
	if d := os.Getenv("REPRISE_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "reprise-cache"), nil
	}
	return filepath.Join(d, "reprise"), nil
}

func build(ctx context.Context) (*Kit, error) {
	root, err := cacheRoot()
	if err != nil {
		return nil, err
	}
	final := filepath.Join(root, "kit-"+Hash())
	if _, err := os.Stat(filepath.Join(final, "build", kitImage)); err == nil {
		return &Kit{Dir: filepath.Join(final, "build")}, nil
	}
	for _, tool := range []string{"cc", "ld", "make", "objcopy"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%w (%s not found)", ErrNoCompiler, tool)
		}
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("guest: cache directory: %w", err)
	}
	tmp, err := os.MkdirTemp(root, "building-")
	if err != nil {
		return nil, fmt.Errorf("guest: cache directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.CopyFS(tmp, sources); err != nil {
		return nil, fmt.Errorf("guest: extracting kit sources: %w", err)
	}
	cmd := exec.CommandContext(ctx, "make", "-s", "-C", tmp, "O=build")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("guest: building the kit failed: %w\n%s", err, strings.TrimSpace(string(out)))
	}
	// Another process may have finished the same build first; either copy
	// is the same kit.
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(filepath.Join(final, "build", kitImage)); serr != nil {
			return nil, fmt.Errorf("guest: installing built kit: %w", err)
		}
	}
	return &Kit{Dir: filepath.Join(final, "build")}, nil
}
