package linux

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/reprise-vm/reprise/linux/vfs"
)

// libraryDirs are where the dynamic loader looks for libraries without a
// cache (the guest has no /etc/ld.so.cache), in its order; the host's
// libraries are found in the same places, and appear in the guest at the
// first.
var libraryDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/lib", "/usr/lib"}

// maxLibraries bounds the dependency walk.
const maxLibraries = 256

// Dependencies are the host files a dynamically linked executable needs
// to start, found the way ldd finds them: its loader (PT_INTERP) and the
// libraries it and they name (DT_NEEDED), recursively. A static executable
// needs none.
//
// The executable names these paths, and an executable is as untrusted as
// a tape: a host file is read only where loaders and libraries are (the
// loader in one of libraryDirs, a library found there by its name). A
// loader elsewhere, or a library named by a path, is refused, naming it,
// unless it is one of the files given (by guest path), which are the
// user's to choose.
func Dependencies(image []byte, given ...File) ([]File, error) {
	f, err := parseELF(bytes.NewReader(image))
	if err != nil {
		return nil, fmt.Errorf("linux: %w", err)
	}
	defer f.Close()
	interp, err := interpreter(f)
	if err != nil {
		return nil, fmt.Errorf("linux: %w", err)
	}
	if interp == "" {
		return nil, nil
	}
	isGiven := map[string]bool{}
	for _, g := range given {
		isGiven[vfs.Clean(g.Guest)] = true
	}
	var out []File
	if !isGiven[vfs.Clean(interp)] {
		if err := checkLoader(interp); err != nil {
			return nil, err
		}
		out = append(out, File{Guest: interp, Host: interp})
	}
	seen := map[string]bool{}
	queue, err := f.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("linux: DT_NEEDED: %w", err)
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		if len(seen) > maxLibraries {
			return nil, fmt.Errorf("linux: more than %d libraries", maxLibraries)
		}
		if path.Base(name) != name {
			// The loader opens a path as it is, in the guest.
			if isGiven[vfs.Clean(name)] {
				continue
			}
			return nil, fmt.Errorf("linux: the program needs the library %q, a path rather than a name: reprise finds libraries by name in %v and reads no other host file; give it with --file HOST:%s", name, libraryDirs, vfs.Clean(name))
		}
		host, err := findLibrary(name)
		if err != nil {
			return nil, err
		}
		out = append(out, File{Guest: path.Join(libraryDirs[0], name), Host: host})
		more, err := neededBy(host)
		if err != nil {
			return nil, err
		}
		queue = append(queue, more...)
	}
	return out, nil
}

// interpreter is the loader f asks for (PT_INTERP), or "".
func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, min(p.Filesz, 4096))
			if _, err := p.ReadAt(b, 0); err != nil {
				return "", fmt.Errorf("PT_INTERP: %w", err)
			}
			return string(bytes.TrimRight(b, "\x00")), nil
		}
	}
	return "", nil
}

// checkLoader accepts a loader to read from the host: an absolute, clean
// path directly in one of libraryDirs, to a regular file.
func checkLoader(interp string) error {
	dir, _ := path.Split(interp)
	if path.IsAbs(interp) && path.Clean(interp) == interp && slices.Contains(libraryDirs, path.Clean(dir)) {
		st, err := os.Stat(interp)
		if err != nil {
			return fmt.Errorf("linux: the program's loader (PT_INTERP): %w", err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("linux: the program's loader %s (PT_INTERP) is not a regular file", interp)
		}
		return nil
	}
	return fmt.Errorf("linux: the program's loader %q (PT_INTERP) is not in a library folder %v: reprise reads no other host file as a loader; give it with --file HOST:%s", interp, libraryDirs, vfs.Clean(interp))
}

// neededBy lists the libraries the library at host names (DT_NEEDED).
func neededBy(host string) ([]string, error) {
	file, err := os.Open(host)
	if err != nil {
		return nil, fmt.Errorf("linux: %w", err)
	}
	defer file.Close()
	lib, err := parseELF(file)
	if err != nil {
		return nil, fmt.Errorf("linux: library %s: %w", host, err)
	}
	defer lib.Close()
	more, err := lib.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("linux: library %s: DT_NEEDED: %w", host, err)
	}
	return more, nil
}

func findLibrary(name string) (string, error) {
	for _, dir := range libraryDirs {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("linux: library %s not found in %v", name, libraryDirs)
}
