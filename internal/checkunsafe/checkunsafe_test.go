// Package checkunsafe enforces where unsafe may be used: only in files
// named *_unsafe.go (or *_unsafe_test.go), and outside tests only in the
// packages that speak raw kernel interfaces, so every raw pointer in reprise
// sits in a few small, reviewed places.
package checkunsafe

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowed lists the directories whose non-test code may import unsafe: the
// two packages that speak raw kernel interfaces (KVM, perf events), and
// guest RAM's, whose words a host thread exchanges with the running vCPU
// atomically.
var allowed = map[string]bool{"kvm": true, "pmu": true, "vmm/memory": true}

func TestUnsafeOnlyInUnsafeFiles(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s", root)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "build") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		rel, _ := filepath.Rel(root, path)
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p != "unsafe" {
				continue
			}
			name := filepath.Base(path)
			isTest := strings.HasSuffix(name, "_test.go")
			if !strings.HasSuffix(strings.TrimSuffix(name, "_test.go"), "_unsafe") &&
				!strings.HasSuffix(strings.TrimSuffix(name, ".go"), "_unsafe") {
				t.Errorf("%s imports unsafe but is not named *_unsafe.go", rel)
			}
			if !isTest && !allowed[filepath.Dir(rel)] {
				t.Errorf("%s imports unsafe outside the packages allowed to (%v)", rel, allowed)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("only %d Go files found under %s: walking the wrong tree?", checked, root)
	}
}
