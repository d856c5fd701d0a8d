package linux

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path"
	"path/filepath"
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
func Dependencies(image []byte) ([]File, error) {
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		return nil, fmt.Errorf("linux: not an ELF file: %w", err)
	}
	defer f.Close()
	interp := ""
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, min(p.Filesz, 4096))
			if _, err := p.ReadAt(b, 0); err != nil {
				return nil, fmt.Errorf("linux: PT_INTERP: %w", err)
			}
			interp = string(bytes.TrimRight(b, "\x00"))
		}
	}
	if interp == "" {
		return nil, nil
	}
	out := []File{{Guest: interp, Host: interp}}
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
		host, err := findLibrary(name)
		if err != nil {
			return nil, err
		}
		out = append(out, File{Guest: path.Join(libraryDirs[0], name), Host: host})
		lib, err := elf.Open(host)
		if err != nil {
			return nil, fmt.Errorf("linux: %s: %w", host, err)
		}
		more, err := lib.ImportedLibraries()
		lib.Close()
		if err != nil {
			return nil, fmt.Errorf("linux: %s: DT_NEEDED: %w", host, err)
		}
		queue = append(queue, more...)
	}
	return out, nil
}

func findLibrary(name string) (string, error) {
	if path.Base(name) != name {
		return name, nil // a path: taken as it is
	}
	for _, dir := range libraryDirs {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("linux: library %s not found in %v", name, libraryDirs)
}
